"""The SageMaker Python SDK v2, as its users run it, against the emulator (in the SDK's own venv)."""

from __future__ import annotations

import pytest

from tests.sdk.venvs import V2, run_clients

pytestmark = pytest.mark.emulator


@pytest.fixture(scope="module")
def v2_results(emulator):
    run_clients(emulator.endpoint_url, emulator.home)
    return V2.results()


def test_estimators_fit_transform_deploy_predict_and_delete(v2_results):
    for framework in ("sklearn", "pytorch", "xgboost"):
        assert v2_results[f"{framework}_status"] == "Completed"
        assert v2_results[f"{framework}_endpoint_accuracy"] >= 0.9, (framework, v2_results)
        assert v2_results[f"{framework}_transform_accuracy"] >= 0.9, (framework, v2_results)
    # Estimator(image_uri=image_uris.retrieve("xgboost", ...)): the algorithm, its metrics, its model served
    assert v2_results["builtin_status"] == "Completed" and v2_results["builtin_metrics"]["validation:auc"] > 0.9
    assert v2_results["builtin_endpoint_accuracy"] >= 0.9
    assert v2_results["endpoints_left"] == []  # predictor.delete_endpoint() deleted each


def test_a_workflow_airflow_config_trains_through_the_providers_operator(v2_results, clients):
    """`sagemaker.workflow.airflow.training_config` -> the Amazon provider's SageMakerTrainingOperator, which
    uploads the config's S3Operations (the script's folder) and starts the job."""
    from airflow.providers.amazon.aws.operators.sagemaker import SageMakerTrainingOperator

    config = v2_results["airflow_training_config"]
    upload = config["S3Operations"]["S3Upload"][0]  # the operator takes it out of the config
    operator = SageMakerTrainingOperator(
        task_id="train", config=config, wait_for_completion=True, check_interval=1, print_log=False, deferrable=False
    )
    result = operator.execute({"ti": None})
    assert result["Training"]["TrainingJobStatus"] == "Completed", result["Training"].get("FailureReason")
    assert clients["s3"].head_object(Bucket=upload["Bucket"], Key=upload["Key"])["ContentLength"] > 0
