"""One poll serves many waits: the shared Poller's calls, answers and backoff, on fake AWS clients."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from botocore.exceptions import ClientError

from mlscale.waits import poller as poller_module
from mlscale.waits.kinds import KINDS
from mlscale.waits.poller import Poller


class Clock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        time.sleep(seconds)


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(poller_module, "time", clock)
    return clock


def now() -> datetime:
    return datetime.now(UTC)


class FakeSageMaker:
    """Training jobs with a status, a secondary status and a LastModifiedTime; List* pages as SageMaker does."""

    def __init__(self, jobs: dict[str, tuple[str, str, datetime]]):
        self.jobs, self.lists, self.describes, self.refuse = jobs, 0, 0, None

    def list_training_jobs(self, LastModifiedTimeAfter, MaxResults, NextToken=None):  # noqa: N803 - the API's
        self.lists += 1
        if self.refuse:
            raise ClientError({"Error": {"Code": self.refuse, "Message": "Rate exceeded"}}, "ListTrainingJobs")
        changed = sorted(n for n, (_, _, modified) in self.jobs.items() if modified > LastModifiedTimeAfter)
        start = int(NextToken or 0)
        page = {
            "TrainingJobSummaries": [
                {
                    "TrainingJobName": n,
                    "TrainingJobStatus": self.jobs[n][0],
                    "SecondaryStatus": self.jobs[n][1],
                    "LastModifiedTime": self.jobs[n][2],
                }
                for n in changed[start : start + MaxResults]
            ],
            "ResponseMetadata": {"HTTPHeaders": {"date": format_datetime(now(), usegmt=True)}},
        }
        if start + MaxResults < len(changed):
            page["NextToken"] = str(start + MaxResults)
        return page

    def describe_training_job(self, TrainingJobName):  # noqa: N803
        self.describes += 1
        if TrainingJobName not in self.jobs:
            raise ClientError(
                {
                    "Error": {
                        "Code": "ValidationException",
                        "Message": f"Could not find requested job with name {TrainingJobName}",
                    }
                },
                "DescribeTrainingJob",
            )
        status, secondary, _ = self.jobs[TrainingJobName]
        return {
            "TrainingJobName": TrainingJobName,
            "TrainingJobStatus": status,
            "SecondaryStatus": secondary,
            "FailureReason": "AlgorithmError: boom" if status == "Failed" else None,
        }


def test_a_thousand_training_waits_make_one_list_a_poll_and_no_describe(clock):
    a_minute_ago = now() - timedelta(minutes=1)
    sagemaker = FakeSageMaker({f"job-{i:04d}": ("InProgress", "Training", a_minute_ago) for i in range(1000)})
    shared = Poller(KINDS["training"], sagemaker)
    first = [shared.describe(name, max_age=30) for name in sagemaker.jobs]
    assert {d["TrainingJobStatus"] for d in first} == {"InProgress"}
    assert (sagemaker.lists, sagemaker.describes) == (10, 0)  # a look back over every recent change, 100 a page

    for name in list(sagemaker.jobs)[:7]:
        sagemaker.jobs[name] = ("Completed", "Completed", now())
    clock.now += 10  # within the interval: the answers are reused
    assert shared.describe("job-0000", max_age=30)["TrainingJobStatus"] == "InProgress"
    clock.now += 25
    second = {name: shared.describe(name, max_age=30) for name in sagemaker.jobs}
    assert [n for n, d in second.items() if d["TrainingJobStatus"] == "Completed"] == list(sagemaker.jobs)[:7]
    assert second["job-0000"]["SecondaryStatus"] == "Completed"
    assert (sagemaker.lists, sagemaker.describes) == (11, 0)  # one page: only what changed since the last look


def test_a_job_that_did_not_change_lately_is_described_once_and_then_listed(clock):
    sagemaker = FakeSageMaker({"old-job": ("InProgress", "Training", now() - timedelta(hours=2))})
    shared = Poller(KINDS["training"], sagemaker)
    assert shared.describe("old-job", max_age=5)["SecondaryStatus"] == "Training"
    assert (sagemaker.lists, sagemaker.describes) == (1, 1)
    clock.now += 5
    shared.describe("old-job", max_age=5)
    assert (sagemaker.lists, sagemaker.describes) == (2, 1)
    sagemaker.jobs["old-job"] = ("Failed", "Failed", now())
    clock.now += 5
    assert shared.describe("old-job", max_age=5)["TrainingJobStatus"] == "Failed"


def test_an_unknown_job_gets_the_services_own_not_found_error(clock):
    shared = Poller(KINDS["training"], FakeSageMaker({}))
    with pytest.raises(ClientError, match="Could not find requested job with name ghost") as raised:
        shared.describe("ghost", max_age=5)
    assert raised.value.response["Error"]["Code"] == "ValidationException"
    assert KINDS["training"].describe_or_none(shared.client, "ghost") is None


def test_a_throttled_refresh_backs_off_for_every_wait_at_once(clock):
    sagemaker = FakeSageMaker({"job": ("InProgress", "Training", now())})
    sagemaker.refuse = "ThrottlingException"
    shared = Poller(KINDS["training"], sagemaker)
    for _ in range(50):  # fifty waits ask during the backoff: one call reached AWS
        with pytest.raises(ClientError, match="ThrottlingException"):
            shared.describe("job", max_age=5)
    assert sagemaker.lists == 1
    clock.now += poller_module.THROTTLED_BACKOFF_MAX
    sagemaker.refuse = None
    assert shared.describe("job", max_age=5)["TrainingJobStatus"] == "InProgress"
    assert sagemaker.lists == 2


def test_an_error_that_is_not_a_throttle_reaches_the_wait(clock):
    sagemaker = FakeSageMaker({"job": ("InProgress", "Training", now())})
    sagemaker.refuse = "AccessDeniedException"
    with pytest.raises(ClientError, match="AccessDeniedException"):
        Poller(KINDS["training"], sagemaker).describe("job", max_age=5)


class FakeBatch:
    def __init__(self, jobs: dict[str, str]):
        self.jobs, self.calls, self.sizes = jobs, 0, []

    def describe_jobs(self, jobs):
        assert len(jobs) <= 100, "DescribeJobs takes at most 100 ids"
        time.sleep(0.01)  # a round trip: the waits that arrive meanwhile join the next call
        self.calls += 1
        self.sizes.append(len(jobs))
        return {"jobs": [{"jobId": j, "jobName": j, "status": self.jobs[j]} for j in jobs if j in self.jobs]}


def test_batch_waits_share_describe_jobs_a_hundred_ids_a_call(clock):
    batch = FakeBatch({f"id-{i}": "RUNNING" for i in range(250)})
    shared = Poller(KINDS["batch_job"], batch)
    with ThreadPoolExecutor(32) as pool:  # a burst of new waits, as a triggerer's poll threads run them
        assert {d["status"] for d in pool.map(lambda i: shared.describe(i, max_age=5), batch.jobs)} == {"RUNNING"}
    assert batch.calls < 50  # the ids that came during a call are asked for together in the next
    clock.now += 5
    assert shared.describe("id-0", max_age=5)["status"] == "RUNNING"
    assert batch.sizes[-3:] == [100, 100, 50]
    with pytest.raises(ClientError) as raised:
        shared.describe("id-missing", max_age=5)
    assert raised.value.response["Error"]["Code"] == "ResourceNotFound"


def test_a_settled_wait_is_forgotten_and_no_longer_refreshed(clock):
    batch = FakeBatch({"a": "SUCCEEDED", "b": "RUNNING"})
    shared = Poller(KINDS["batch_job"], batch)
    shared.describe("a", max_age=5)
    shared.describe("b", max_age=5)
    shared.forget("a")
    clock.now += 5
    shared.describe("b", max_age=5)
    assert batch.sizes[-1] == 1


class FakeFSx:
    def __init__(self, ids):
        self.ids, self.calls = ids, 0

    def describe_file_systems(self, FileSystemIds):  # noqa: N803
        self.calls += 1
        missing = [i for i in FileSystemIds if i not in self.ids]
        if missing:
            raise ClientError(
                {"Error": {"Code": "FileSystemNotFound", "Message": f"{missing[0]} not found"}}, "DescribeFileSystems"
            )
        return {"FileSystems": [{"FileSystemId": i, "Lifecycle": "AVAILABLE"} for i in FileSystemIds]}


def test_fsx_refuses_a_batch_with_an_unknown_id_so_each_is_asked_alone(clock):
    fsx = FakeFSx({"fs-1", "fs-2"})
    found = KINDS["fsx_file_system"].describe_many(fsx, ["fs-1", "fs-gone", "fs-2"])
    assert found["fs-gone"] is None and found["fs-1"]["Lifecycle"] == "AVAILABLE"
    assert fsx.calls == 4


def test_the_summaries_kept_are_bounded_and_a_dropped_job_is_described_when_asked(clock, monkeypatch):
    monkeypatch.setattr(poller_module, "SEEN_MAX", 50)
    sagemaker = FakeSageMaker({f"job-{i:03d}": ("InProgress", "Training", now()) for i in range(120)})
    shared = Poller(KINDS["training"], sagemaker)
    assert shared.describe("job-000", max_age=5)["TrainingJobStatus"] == "InProgress"
    assert list(shared._seen) == ["job-000"]  # over the bound: only what a wait asks for is kept
    assert shared.describe("job-119", max_age=5)["TrainingJobStatus"] == "InProgress"
    assert sagemaker.describes == 1  # the dropped one, described once
