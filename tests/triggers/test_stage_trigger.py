"""StageTrigger: serialization of every resource kind, and real waits against the emulator, error event and on_kill."""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import pytest

from mlscale.triggers.stage import StageTrigger
from mlscale.waits.kinds import KINDS
from tests.conftest import first_event, training_request, upload_source

SLEEPER = "import time\nprint('started', flush=True)\ntime.sleep(300)\n"
QUICK = "import os\nprint('step=1 loss=0.5', flush=True)\nopen(os.path.join(os.environ['SM_MODEL_DIR'], 'm'), 'w')\n"


pytestmark = pytest.mark.usefixtures("no_trigger_hold")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_round_trips_through_serialize(kind):
    trigger = StageTrigger(
        kind,
        "resource-1",
        poll_interval=7,
        stop_on_kill=True,
        aws_conn_id="aws_x",
        region_name="eu-west-1",
        verify=False,
        botocore_config={"retries": {"mode": "standard"}},
        next_poll_at=1_800_000_000.5,
    )
    classpath, kwargs = trigger.serialize()
    module, name = classpath.rsplit(".", 1)
    rebuilt = getattr(__import__(module, fromlist=[name]), name)(**kwargs)
    assert rebuilt.serialize() == (classpath, kwargs)
    assert classpath == "mlscale.triggers.stage.StageTrigger" and kwargs["kind"] == kind
    assert kwargs["next_poll_at"] == 1_800_000_000.5


def start_job(clients, name: str, script: str) -> None:
    source = upload_source(clients["s3"], {"train.py": script}, f"trigger-tests/{name}/sourcedir.tar.gz")
    clients["sagemaker"].create_training_job(**training_request(name, source))


@pytest.mark.emulator
def test_success_event_and_the_jobs_log_lines(emulator, clients, capfd):
    start_job(clients, "trigger-quick", QUICK)
    event = first_event(StageTrigger("training", "trigger-quick", poll_interval=0.3))
    assert event == {
        "status": "success",
        "kind": "training",
        "resource_id": "trigger-quick",
        "state": "Completed",
        "reason": None,
    }
    assert "[algo-1] step=1 loss=0.5" in capfd.readouterr().out


@pytest.mark.emulator
def test_the_first_describe_waits_for_next_poll_at(emulator):
    """A stage defers right after it created or described its resource: the trigger does not ask again at once,
    but a poll interval after that look; one whose time has passed (a slow hand-off) asks at once."""
    started = time.time()
    event = first_event(StageTrigger("training", "no-such-job-yet", poll_interval=0.3, next_poll_at=started + 1.5))
    assert event["status"] == "error"  # what the first Describe answered, not sooner than asked for
    assert time.time() - started >= 1.5
    started = time.time()
    event = first_event(StageTrigger("training", "no-such-job-yet", poll_interval=60, next_poll_at=started - 10))
    assert event["status"] == "error" and time.time() - started < 30  # not a minute's wait


@pytest.mark.emulator
def test_failed_event_carries_the_service_reason(emulator, clients):
    start_job(clients, "trigger-fails", "raise SystemExit('disk full')\n")
    event = first_event(StageTrigger("training", "trigger-fails", poll_interval=0.3))
    assert event["status"] == "failed" and event["state"] == "Failed" and "disk full" in event["reason"]


@pytest.mark.emulator
def test_a_resource_that_cannot_be_described_gives_an_error_event(emulator):
    event = first_event(StageTrigger("training", "no-such-job", poll_interval=0.3))
    assert event["status"] == "error" and "Could not find" in event["reason"]
    event = first_event(StageTrigger("fsx_file_system", "fs-0000000000000000", poll_interval=0.3))
    assert event["status"] == "error" and "FileSystemNotFound" in event["reason"]


@pytest.mark.emulator
def test_fsx_file_system_settles_available(emulator):
    import boto3

    fsx = boto3.client("fsx", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    fs = fsx.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=1200,
        SubnetIds=["subnet-0123456789abcdef0"],
        LustreConfiguration={"DeploymentType": "SCRATCH_2"},
    )["FileSystem"]
    event = first_event(StageTrigger("fsx_file_system", fs["FileSystemId"], poll_interval=0.2))
    assert event["status"] == "success" and event["state"] == "AVAILABLE"
    fsx.delete_file_system(FileSystemId=fs["FileSystemId"])


@pytest.mark.emulator
def test_on_kill_stops_the_job_only_when_asked(emulator, clients):
    sagemaker = clients["sagemaker"]
    start_job(clients, "trigger-killed", SLEEPER)
    deadline = time.monotonic() + 60
    while sagemaker.describe_training_job(TrainingJobName="trigger-killed")["SecondaryStatus"] != "Training":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    asyncio.run(StageTrigger("training", "trigger-killed", stop_on_kill=False).on_kill())
    assert sagemaker.describe_training_job(TrainingJobName="trigger-killed")["TrainingJobStatus"] == "InProgress"
    asyncio.run(StageTrigger("training", "trigger-killed", stop_on_kill=True).on_kill())
    event = first_event(StageTrigger("training", "trigger-killed", poll_interval=0.3))
    assert event["status"] == "failed" and event["state"] == "Stopped"


@pytest.mark.emulator
@pytest.mark.skipif(sys.version_info >= (3, 12), reason="cached_property has a class-wide lock up to Python 3.11")
def test_the_trigger_makes_its_client_off_the_event_loop(emulator, clients):
    """The triggerer's deadlock, reproduced: another trigger's thread (the provider's SqsSensorTrigger making its
    client) holds the hook class's cached_property lock while it waits for the event loop (the connection comes
    through the triggerer's supervisor). A trigger that made its client on the loop blocked it for good."""
    from airflow.providers.amazon.aws.hooks.base_aws import AwsGenericHook

    start_job(clients, "trigger-off-loop", QUICK)
    lock = AwsGenericHook.__dict__["conn_config"].lock  # Python 3.11: one lock for every hook instance
    held, waited_for_loop = threading.Event(), {}

    def other_trigger_thread(loop_ran: threading.Event) -> None:
        with lock:
            held.set()
            waited_for_loop["ok"] = loop_ran.wait(10)

    async def run() -> dict:
        loop_ran = threading.Event()
        thread = threading.Thread(target=other_trigger_thread, args=(loop_ran,))
        thread.start()
        held.wait(5)
        events = StageTrigger("training", "trigger-off-loop", poll_interval=0.3).run()
        first = asyncio.ensure_future(events.__anext__())
        await asyncio.sleep(0.5)  # the loop must keep running while the lock is held
        loop_ran.set()
        thread.join()
        return (await first).payload

    assert asyncio.run(run())["status"] == "success"
    assert waited_for_loop["ok"], "the event loop was blocked while another thread held the hook's lock"
