"""The SageMaker Python SDK v2, as its users run it, against the emulator (in the SDK's own venv)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROLE_ARN
from tests.sdk.venvs import V2

pytestmark = pytest.mark.emulator
CLIENTS = Path(__file__).resolve().parent / "clients"


def run_client(python, script: str, emulator, tmp_path, bucket: str) -> dict:
    """Run an SDK client script with nothing of this process's environment but the emulator's address."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "AWS_ENDPOINT_URL": emulator.endpoint_url,
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "SDK_TEST_ROLE": ROLE_ARN, "SDK_TEST_BUCKET": bucket, "TMPDIR": str(tmp_path)}  # fmt: skip
    done = subprocess.run([str(python), str(CLIENTS / script)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    found = [line for line in done.stdout.splitlines() if "SDK-RESULTS " in line]  # after the SDK's progress dots
    assert found, done.stdout[-3000:]
    return json.loads(found[-1].split("SDK-RESULTS ", 1)[1])


@pytest.fixture(scope="module")
def v2_results(emulator, tmp_path_factory):
    return run_client(V2.ready(), "v2_frameworks.py", emulator, tmp_path_factory.mktemp("sdk-v2"), "sdk-v2-test")


def test_estimators_fit_transform_deploy_predict_and_delete(v2_results):
    for framework in ("sklearn", "pytorch", "xgboost"):
        assert v2_results[f"{framework}_status"] == "Completed"
        assert v2_results[f"{framework}_endpoint_accuracy"] >= 0.9, (framework, v2_results)
    assert v2_results["sklearn_transform_accuracy"] >= 0.9
    assert v2_results["endpoints_left"] == []  # predictor.delete_endpoint() deleted each


def test_a_workflow_airflow_config_trains_through_the_providers_operator(v2_results, clients):
    """`sagemaker.workflow.airflow.training_config` -> the Amazon provider's SageMakerTrainingOperator, which
    uploads the config's S3Operations (the script's folder) and starts the job."""
    from airflow.providers.amazon.aws.operators.sagemaker import SageMakerTrainingOperator

    config = v2_results["airflow_training_config"]
    upload = config["S3Operations"]["S3Upload"][0]  # the operator takes it out of the config
    operator = SageMakerTrainingOperator(task_id="train", config=config, wait_for_completion=True, check_interval=1,
                                         print_log=False, deferrable=False)  # fmt: skip
    result = operator.execute({"ti": None})
    assert result["Training"]["TrainingJobStatus"] == "Completed", result["Training"].get("FailureReason")
    assert clients["s3"].head_object(Bucket=upload["Bucket"], Key=upload["Key"])["ContentLength"] > 0
