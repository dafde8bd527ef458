"""SageMakerScriptTrainingOperator against the emulator: naming, reattach, failures, deferral."""

from __future__ import annotations

import time
import urllib.request

import pytest
from airflow.sdk.exceptions import AirflowException, TaskDeferred

from mlscale.links import TrainingJobLink
from mlscale.operators import SageMakerScriptTrainingOperator
from mlscale.operators.stage import StageOperator
from mlscale.specs import SpecError, TrainingSpec
from mlscale.triggers.stage import StageTrigger
from tests.conftest import ROLE_ARN, first_event

pytestmark = pytest.mark.emulator

QUICK = (
    "import os\nprint('accuracy=0.97', flush=True)\n"
    "open(os.path.join(os.environ['SM_MODEL_DIR'], 'm.txt'), 'w').write('m')\n"
)
FAILING = "raise RuntimeError('out of cheese')\n"
SLEEPER = "import time\nprint('started', flush=True)\ntime.sleep(300)\n"


class FakeTI:
    dag_id = "operator_tests"
    map_index = -1

    def __init__(self, task_id: str, run_id: str = "manual__2026-12-01T00:00:00+00:00"):
        self.task_id, self.run_id, self.pushed = task_id, run_id, {}

    def xcom_push(self, key, value):
        self.pushed[key] = value


def make_operator(tmp_path, script: str, task_id: str, **kwargs) -> tuple[SageMakerScriptTrainingOperator, dict]:
    source = tmp_path / task_id
    source.mkdir(exist_ok=True)
    (source / "train.py").write_text(script)
    spec_fields = dict(
        entry_point="train.py",
        source_dir=str(source),
        role_arn=ROLE_ARN,
        output_path="s3://mlscale-test/operator-models",
        image_uri="example/image:1",
        instance_type="ml.c5.xlarge",
        metric_definitions={"accuracy": r"accuracy=([0-9.]+)"},
    )
    spec_fields.update(kwargs.pop("spec", {}))
    operator = SageMakerScriptTrainingOperator(
        task_id=task_id, spec=TrainingSpec(**spec_fields), poll_interval=0.5, **kwargs
    )
    return operator, {"ti": FakeTI(task_id)}


def jobs_named(sagemaker, fragment: str) -> list[str]:
    return [j["TrainingJobName"] for j in sagemaker.list_training_jobs(NameContains=fragment)["TrainingJobSummaries"]]


def test_runs_the_job_and_returns_its_result(emulator, clients, tmp_path, capfd):
    operator, context = make_operator(tmp_path, QUICK, "quick", deferrable=False)
    result = operator.execute(context)
    assert result["status"] == "Completed"
    assert result["job_name"].startswith("operator-tests-quick-manual-2026-12-01")
    assert result["final_metrics"] == {"accuracy": 0.97}
    assert result["model_artifact"].endswith(f"/{result['job_name']}/output/model.tar.gz")
    assert result["billable_seconds"] >= 1
    assert "[algo-1] accuracy=0.97" in capfd.readouterr().out  # the job's CloudWatch log, in the task log
    # the extra link goes to the emulator's own page for the job, which shows its status and logs
    link = TrainingJobLink().format_link(**context["ti"].pushed["mlscale_training_job"])
    assert link == f"{emulator.endpoint_url}/moto-api/mlscale/training-jobs/{result['job_name']}"
    with urllib.request.urlopen(link) as response:
        page = response.read().decode()
    assert "<b>TrainingJobStatus</b>: Completed" in page and "accuracy=0.97" in page


def test_interrupted_task_reattaches_instead_of_starting_a_second_job(emulator, clients, tmp_path, monkeypatch):
    operator, context = make_operator(tmp_path, SLEEPER.replace("300", "3"), "reattach", deferrable=False)

    def killed(self, wait):
        raise KeyboardInterrupt("worker killed after the job was created")

    monkeypatch.setattr(StageOperator, "_wait_here", killed)
    with pytest.raises(KeyboardInterrupt):
        operator.execute(context)
    monkeypatch.undo()

    retried, _ = make_operator(tmp_path, SLEEPER.replace("300", "3"), "reattach", deferrable=False)
    result = retried.execute(context)
    assert result["status"] == "Completed"
    assert jobs_named(clients["sagemaker"], "operator-tests-reattach") == [result["job_name"]]

    # and once completed, a rerun reuses the result without a new job
    assert make_operator(tmp_path, QUICK, "reattach", deferrable=False)[0].execute(context) == result
    assert len(jobs_named(clients["sagemaker"], "operator-tests-reattach")) == 1


def test_failed_job_fails_the_task_with_the_reason_and_a_retry_gets_a_new_name(emulator, clients, tmp_path):
    operator, context = make_operator(tmp_path, FAILING, "fails", deferrable=False)
    with pytest.raises(AirflowException, match="RuntimeError: out of cheese"):
        operator.execute(context)
    with pytest.raises(AirflowException, match="out of cheese"):
        make_operator(tmp_path, FAILING, "fails", deferrable=False)[0].execute(context)
    first, second = sorted(jobs_named(clients["sagemaker"], "operator-tests-fails"), key=len)
    assert second.endswith("-a2") and first[-8:] == second[-11:-3]  # same identity hash, new attempt


def test_bad_spec_fails_before_any_aws_call(emulator, clients, tmp_path):
    operator, context = make_operator(tmp_path, QUICK, "badspec", deferrable=False, spec={"instance_count": 0})
    with pytest.raises(SpecError, match="instance_count: must be an integer from 1 to 100"):
        operator.execute(context)
    assert jobs_named(clients["sagemaker"], "operator-tests-badspec") == []


@pytest.fixture(autouse=True)
def _no_trigger_hold(no_trigger_hold):
    pass


def test_deferrable_by_default_and_the_trigger_streams_logs_to_completion(
    emulator, clients, tmp_path, capfd, monkeypatch
):
    # a short hold keeps the test quick; the job itself ends sooner than it
    monkeypatch.setenv("AIRFLOW__MLSCALE__FIRST_EVENT_DELAY", "4")
    operator, context = make_operator(tmp_path, QUICK, "deferred")
    assert operator.deferrable is True
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute(context)
    trigger = deferred.value.trigger
    assert isinstance(trigger, StageTrigger) and deferred.value.method_name == "execute_complete"
    capfd.readouterr()
    started = time.monotonic()
    event = first_event(trigger)
    # the event waits out Airflow's race between the deferral's exit and the resumed try (apache/airflow#72716)
    assert time.monotonic() - started >= 4.0
    assert event["status"] == "success" and event["state"] == "Completed"
    assert "[algo-1] accuracy=0.97" in capfd.readouterr().out
    assert operator.execute_complete(context, event)["final_metrics"] == {"accuracy": 0.97}


def test_stopped_job_fails_the_task(emulator, clients, tmp_path):
    operator, context = make_operator(tmp_path, SLEEPER, "stopped")
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute(context)
    job_name = deferred.value.trigger.resource_id
    sagemaker = clients["sagemaker"]
    deadline = time.monotonic() + 60
    while sagemaker.describe_training_job(TrainingJobName=job_name)["SecondaryStatus"] != "Training":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    operator.on_kill()  # what Airflow calls when the task is killed: it stops the job it started
    event = first_event(deferred.value.trigger)
    assert event["status"] == "failed" and event["state"] == "Stopped"
    with pytest.raises(AirflowException, match="ended Stopped"):
        operator.execute_complete(context, event)


def test_neo_compilation_operator_compiles_and_reuses_on_retry(emulator, clients, tmp_path):
    """The compilation job kind: upper-case statuses and ResourceNotFound are handled by the shared base."""
    import io

    import torch

    from mlscale.operators import SageMakerNeoCompilationOperator
    from mlscale.specs import CompilationSpec
    from tests.conftest import model_tar

    buffer = io.BytesIO()
    torch.jit.save(torch.jit.trace(torch.nn.Linear(64, 10).eval(), torch.rand(1, 64)), buffer)
    clients["s3"].put_object(
        Bucket="mlscale-test", Key="neo-op/model.tar.gz", Body=model_tar({"model.pt": buffer.getvalue()})
    )
    spec = CompilationSpec(
        "s3://mlscale-test/neo-op/model.tar.gz",
        ROLE_ARN,
        "s3://mlscale-test/neo-op/out/",
        {"input0": [1, 64]},
        target_device="ml_g4dn",
    )
    context = {"ti": FakeTI("compile")}
    first = SageMakerNeoCompilationOperator(task_id="compile", spec=spec, deferrable=False, poll_interval=0.3).execute(
        context
    )
    assert (
        first["compiled_artifact"] == "s3://mlscale-test/neo-op/out/model-ml_g4dn.tar.gz"
        and first["target"] == "ml_g4dn"
    )
    again = SageMakerNeoCompilationOperator(task_id="compile", spec=spec, deferrable=False, poll_interval=0.3).execute(
        context
    )
    assert again == first  # the completed job is found and reused, not compiled twice


@pytest.mark.parametrize("job_name", ["x" * 100, "../../x", "team/job", "-leading-dash"])
def test_an_explicit_job_name_breaking_the_sagemaker_rule_is_refused_before_any_call(tmp_path, job_name):
    operator, context = make_operator(tmp_path, QUICK, "badname", deferrable=False, job_name=job_name)
    with pytest.raises(SpecError, match="job_name: must be 1-63 letters, digits and '-'"):
        operator.execute(context)
