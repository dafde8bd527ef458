"""Follow a SageMaker job's CloudWatch log streams, one poll at a time.

The provider's SageMakerHook can print logs only from its blocking
`check_training_status_with_log` loop (describe every 30 s); a trigger needs
a step it can call between sleeps, so this keeps the read positions and
reuses the hook's `multi_stream_iter` to interleave the streams.
"""

from __future__ import annotations

from airflow.providers.amazon.aws.hooks.sagemaker import Position, SageMakerHook


class JobLogTail:
    """Streams `<job>/algo-N-<epoch>` in a log group such as /aws/sagemaker/TrainingJobs."""

    def __init__(self, hook: SageMakerHook, log_group: str, job_name: str, since_ms: int | None = None):
        self.hook = hook
        self.log_group = log_group
        self.job_name = job_name
        self.since_ms = since_ms or 0  # streams start here: a rescheduled sensor shows only the new lines
        self.positions: dict[str, Position] = {}

    def _discover_streams(self) -> None:
        logs = self.hook.logs_hook.get_conn()
        try:
            pages = logs.get_paginator("describe_log_streams").paginate(
                logGroupName=self.log_group, logStreamNamePrefix=f"{self.job_name}/"
            )
            for page in pages:
                for stream in page["logStreams"]:
                    self.positions.setdefault(stream["logStreamName"], Position(timestamp=self.since_ms, skip=0))
        except logs.exceptions.ResourceNotFoundException:
            pass  # no log group until the first container writes

    @property
    def cost(self) -> int:
        """The Logs calls a poll makes, about: DescribeLogStreams, and GetLogEvents for each stream (the
        provider's get_log_events asks a stream up to three times before it stops)."""
        return 1 + 3 * len(self.positions)

    def poll(self, description: dict | None = None) -> list[str]:
        """New lines since the last poll, each prefixed with its host."""
        self._discover_streams()
        streams = sorted(self.positions)
        lines = []
        for index, event in self.hook.multi_stream_iter(self.log_group, streams, dict(self.positions)):
            stream = streams[index]
            timestamp, skip = self.positions[stream]
            self.positions[stream] = (
                Position(timestamp, skip + 1) if event["timestamp"] == timestamp else Position(event["timestamp"], 1)
            )
            host = stream.split("/", 1)[-1].rsplit("-", 1)[0]
            lines.append(f"[{host}] {event['message']}")
        return lines
