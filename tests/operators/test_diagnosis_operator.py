"""TrainingDiagnosisOperator reads the emulator's real utilisation metrics of a finished job."""

from __future__ import annotations

import pytest

from mlscale.operators import TrainingDiagnosisOperator
from mlscale.specs import DiagnosisSpec
from tests.conftest import training_request, upload_source, wait_for_job
from tests.operators.test_training_operator import FakeTI

pytestmark = pytest.mark.emulator

WAITS_ON_DATA = """
import time
for epoch in range(3):
    time.sleep(1)  # the loader waits: nothing to compute
    print(f"epoch={epoch} data_wait_fraction=0.62", flush=True)
"""


def test_a_job_waiting_on_data_is_io_bound_and_the_next_step_is_storage(emulator, clients):
    source = upload_source(clients["s3"], {"train.py": WAITS_ON_DATA}, "code/diagnose/sourcedir.tar.gz")
    request = training_request(
        "waits-on-data", source, instance_count=2, metrics={"data:wait_fraction": r"data_wait_fraction=([0-9.]+)"}
    )
    clients["sagemaker"].create_training_job(**request)
    assert wait_for_job(clients["sagemaker"], "waits-on-data")["TrainingJobStatus"] == "Completed"

    spec = DiagnosisSpec(job_name="waits-on-data", period="1")  # a rendered template: a string
    result = TrainingDiagnosisOperator(task_id="diagnose", spec=spec).execute({"ti": FakeTI("diagnose")})
    assert result["points"] >= 4  # CPU, memory and disk samples from both hosts
    assert result["verdict"] == "io-bound", result
    assert result["stats"]["data_wait_fraction"] == pytest.approx(0.62)
    assert result["stats"]["cpu_p95"] < 50
    assert result["recommendation"]["step"] == "storage"
    assert (
        result["recommendation"]["instance_type"] == "ml.c5.xlarge" and result["recommendation"]["instance_count"] == 2
    )


def test_unknown_job_fails_with_the_service_reason(emulator):
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError, match="Could not find training job"):
        TrainingDiagnosisOperator(task_id="diagnose", spec=DiagnosisSpec("never-ran")).execute(
            {"ti": FakeTI("diagnose")}
        )


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"job_name": "../x"}, "job_name: must be a training job name"),
        ({"period": 45}, "period: must be 1, 5, 10, 30 or a multiple of 60 seconds"),
        ({"period": "sixty"}, "period: must be an integer"),
        ({"loader_workers": -1}, "loader_workers: must be an integer from 0 to 256"),
    ],
)
def test_bad_diagnosis_specs(overrides, message):
    from mlscale.specs import SpecError

    with pytest.raises(SpecError, match=message):
        DiagnosisSpec(**{"job_name": "job-1", **overrides}).validate()
