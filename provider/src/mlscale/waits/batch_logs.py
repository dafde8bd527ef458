"""Follow an AWS Batch job's CloudWatch log streams (`/aws/batch/job`), every node's, one poll at a time.

A multi-node job's nodes are node jobs `<job id>#<index>`, each with its own container log stream
(https://docs.aws.amazon.com/batch/latest/userguide/multi-node-parallel-jobs.html); a single-node job has one.
Each poll reads each stream from its last `nextForwardToken`: one GetLogEvents call per stream with nothing
new (the provider's AwsLogsHook.get_log_events makes three before it stops).
"""

from __future__ import annotations

from typing import Any

LOG_GROUP = "/aws/batch/job"
STARTED = ("STARTING", "RUNNING", "SUCCEEDED", "FAILED")


class BatchLogTail:
    """Given the wait's Batch client (node jobs' streams) and its CloudWatch Logs client."""

    def __init__(self, batch: Any, logs: Any, job_id: str, since_ms: int | None = None):
        self.batch, self.logs, self.job_id, self.since_ms = batch, logs, job_id, since_ms or 0
        self.tokens: dict[str, str | None] = {}  # stream -> next forward token
        self.labels: dict[str, str] = {}  # stream -> "node-<index>"
        self.attempts = 0  # a retried attempt's nodes write to new streams

    def _discover(self, description: dict) -> None:
        nodes = (description.get("nodeProperties") or {}).get("numNodes")
        if nodes is None:
            stream = (description.get("container") or {}).get("logStreamName")
            if stream:
                self.labels.setdefault(stream, "node-0")
            return
        attempts = len(description.get("attempts") or [])
        if len(self.labels) >= nodes * max(1, attempts) and attempts == self.attempts:
            return
        self.attempts = attempts
        ids = [f"{self.job_id}#{index}" for index in range(nodes)]
        for start in range(0, len(ids), 100):  # DescribeJobs takes at most 100 ids
            for node in self.batch.describe_jobs(jobs=ids[start : start + 100])["jobs"]:
                stream = (node.get("container") or {}).get("logStreamName")
                if stream:
                    self.labels.setdefault(stream, f"node-{node['nodeDetails']['nodeIndex']}")

    @property
    def cost(self) -> int:
        """The Logs calls a poll makes, about: a GetLogEvents for each stream."""
        return max(1, len(self.labels))

    def poll(self, description: dict | None = None) -> list[str]:
        if description is None or description.get("status") not in STARTED:
            return []
        self._discover(description)
        logs = self.logs
        lines = []
        for stream, label in sorted(self.labels.items(), key=lambda item: item[1]):
            while True:
                request = {"logGroupName": LOG_GROUP, "logStreamName": stream, "startFromHead": True}
                token = self.tokens.get(stream)
                request.update({"nextToken": token} if token else {"startTime": self.since_ms})
                try:
                    response = logs.get_log_events(**request)
                except logs.exceptions.ResourceNotFoundException:
                    break  # the node has not written yet
                lines += [f"[{label}] {event['message']}" for event in response["events"]]
                self.tokens[stream] = response.get("nextForwardToken")
                if not response["events"] or response.get("nextForwardToken") == token:
                    break
        return lines
