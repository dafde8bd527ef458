"""The waits of one triggerer share one hook, and so one boto3 client, per connection and service."""

from __future__ import annotations

import pytest

from mlscale.waits import watch
from mlscale.waits.kinds import KINDS


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    from collections import OrderedDict

    from mlscale.aws import clients
    from mlscale.waits import log_budget, poller

    monkeypatch.setattr(clients, "_hooks", OrderedDict())
    monkeypatch.setattr(clients, "_digests", {})
    monkeypatch.setattr(poller, "_pollers", {})
    monkeypatch.setattr(log_budget, "_budgets", {})


def fake_hook(client):
    """A hook of hook_for's, on a fake client."""
    return type("Hook", (), {"conn": client, "logs_hook": None, "mlscale_params": ("fake", None, None, None)})()


class Listless:
    """ListTrainingJobs answering nothing changed: each job is described (a wait's first look at it)."""

    def list_training_jobs(self, **request):
        return {"TrainingJobSummaries": []}


def test_waits_on_one_connection_share_a_client_and_other_settings_get_their_own(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_WATCH_A", '{"conn_type": "aws", "extra": {"region_name": "us-east-1"}}')
    monkeypatch.setenv("AIRFLOW_CONN_WATCH_B", '{"conn_type": "aws", "extra": {"region_name": "us-east-1"}}')
    training, endpoint, fsx = KINDS["training"], KINDS["endpoint"], KINDS["fsx_file_system"]
    first = watch.shared_hook(training, "watch_a")
    assert watch.shared_hook(endpoint, "watch_a") is first  # one SageMaker client for every SageMaker kind
    assert watch.shared_hook(training, "watch_a").conn is first.conn
    assert watch.shared_hook(training, "watch_b") is not first
    assert watch.shared_hook(training, "watch_a", region_name="eu-west-1") is not first
    assert watch.shared_hook(training, "watch_a", botocore_config={"retries": {"mode": "standard"}}) is not first
    assert watch.shared_hook(fsx, "watch_a").conn.meta.service_model.service_name == "fsx"


def test_an_edited_connection_is_read_after_a_while_and_gets_a_new_hook(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_WATCH_A", '{"conn_type": "aws", "extra": {"region_name": "us-east-1"}}')
    first = watch.shared_hook(KINDS["training"], "watch_a")
    monkeypatch.setenv("AIRFLOW_CONN_WATCH_A", '{"conn_type": "aws", "extra": {"region_name": "eu-west-1"}}')
    assert watch.shared_hook(KINDS["training"], "watch_a") is first  # the read is trusted for a while
    monkeypatch.setattr(watch, "SHARED_HOOK_SECONDS", -1.0)
    edited = watch.shared_hook(KINDS["training"], "watch_a")
    assert edited is not first and edited.conn.meta.region_name == "eu-west-1"
    assert watch.shared_hook(KINDS["training"], "watch_a") is edited  # unchanged since: the same hook


class ThrottledTail:
    """CloudWatch Logs refusing the log reads, as it does past its per-account rate."""

    cost = 1

    def __init__(self):
        self.calls = 0

    def poll(self, description):
        from botocore.exceptions import ClientError

        self.calls += 1
        if self.calls <= 2:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "GetLogEvents")
        return ["[algo-1] epoch=1 loss=0.5"]


class FakeSageMaker(Listless):
    def describe_training_job(self, TrainingJobName):
        return {"TrainingJobName": TrainingJobName, "TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"}


def test_throttled_log_reads_never_fail_the_wait_and_say_so_once():
    kind = KINDS["training"]
    wait = watch.ResourceWatch(kind, "job-1", fake_hook(FakeSageMaker()), interval=0)
    wait.tail = ThrottledTail()  # in place of the job's CloudWatch log tail
    polls = [wait.poll() for _ in range(3)]
    assert all(kind.status(description) == "InProgress" for description, _ in polls)
    said = [line for _, lines in polls for line in lines if "paused" in line]
    assert said == [
        "Log lines paused (tried again at each poll): ClientError: An error occurred "
        "(ThrottlingException) when calling the GetLogEvents operation: Rate exceeded"
    ]
    assert "[algo-1] epoch=1 loss=0.5" in polls[2][1]  # the lines come once the reads are answered again


class ThrottledSageMaker(Listless):
    """SageMaker refusing Describe past its rate (after botocore's own retries), then answering."""

    def __init__(self, refusals: int, code: str = "ThrottlingException"):
        self.refusals, self.code, self.calls = refusals, code, 0

    def describe_training_job(self, TrainingJobName):  # noqa: N803 - the API's name
        from botocore.exceptions import ClientError

        self.calls += 1
        if self.calls <= self.refusals:
            raise ClientError({"Error": {"Code": self.code, "Message": "Rate exceeded"}}, "DescribeTrainingJob")
        return {"TrainingJobName": TrainingJobName, "TrainingJobStatus": "Completed", "SecondaryStatus": "Completed"}


class Clock:
    """Time that passes only when a wait sleeps: the shared poller's backoff and the wait's, without waiting."""

    def __init__(self):
        self.now, self.slept = 1000.0, []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def test_a_throttled_describe_backs_off_and_asks_again_and_never_decides_the_wait(monkeypatch):
    from mlscale.waits import poller

    clock = Clock()
    monkeypatch.setattr(watch.time, "sleep", clock.sleep)
    monkeypatch.setattr(poller, "time", clock)
    slept = clock.slept
    client = ThrottledSageMaker(refusals=6)
    wait = watch.ResourceWatch(KINDS["training"], "job-1", fake_hook(client))
    wait.tail = None  # the Describe alone
    description, lines = wait.poll()
    assert description["TrainingJobStatus"] == "Completed" and client.calls == 7
    assert lines[0] == "training job job-1: Describe throttled (ThrottlingException); backing off and asking again"
    assert len(slept) >= 6 and slept[-1] > slept[0]  # it backs off, with jitter (its own and the poller's)
    assert all(0.5 <= s <= watch.THROTTLED_BACKOFF_MAX for s in slept)


def test_an_error_that_is_not_a_throttle_still_fails_the_poll(monkeypatch):
    from botocore.exceptions import ClientError

    monkeypatch.setattr(watch.time, "sleep", lambda seconds: None)
    client = ThrottledSageMaker(refusals=1, code="AccessDeniedException")
    wait = watch.ResourceWatch(KINDS["training"], "job-1", fake_hook(client))
    wait.tail = None
    with pytest.raises(ClientError, match="AccessDeniedException"):
        wait.poll()


def test_a_describe_after_list_summaries_says_only_what_is_new():
    """A failed job is described at its end after the waits read list summaries: its transitions are not
    said again."""
    kind = KINDS["training"]
    summary = {"TrainingJobName": "j", "TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"}
    described = {
        **summary,
        "TrainingJobStatus": "Failed",
        "SecondaryStatus": "Failed",
        "SecondaryStatusTransitions": [
            {"Status": "Starting"},
            {"Status": "Training"},
            {"Status": "Failed", "StatusMessage": "AlgorithmError"},
        ],
    }
    assert watch.status_lines(kind, summary, None) == ["j: Training"]
    assert watch.status_lines(kind, described, summary) == ["j: Failed - AlgorithmError"]
    assert watch.status_lines(kind, described, None) == [
        "j: Starting - ",
        "j: Training - ",
        "j: Failed - AlgorithmError",
    ]
