"""The Amazon provider's own SageMaker hook sees the same emulator behaviour as mlscale's operator."""

import pytest
from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook
from airflow.sdk.exceptions import AirflowException

from tests.conftest import training_request, upload_source

pytestmark = pytest.mark.emulator


def test_provider_hook_waits_for_a_real_job(emulator, clients):
    source = upload_source(clients["s3"], {"train.py": "print('provider ok')"}, "code/provider/sourcedir.tar.gz")
    hook = SageMakerHook(aws_conn_id="aws_default")
    response = hook.create_training_job(training_request("provider-ok", source), wait_for_completion=True,
                                        print_log=False, check_interval=1)  # fmt: skip
    assert response["TrainingJobArn"].endswith("training-job/provider-ok")
    assert hook.describe_training_job("provider-ok")["TrainingJobStatus"] == "Completed"


def test_provider_hook_reports_the_failure_reason(emulator, clients):
    source = upload_source(clients["s3"], {"train.py": "raise SystemExit('no GPU found')"},
                           "code/provider-fail/sourcedir.tar.gz")  # fmt: skip
    hook = SageMakerHook(aws_conn_id="aws_default")
    with pytest.raises(AirflowException, match="no GPU found"):
        hook.create_training_job(training_request("provider-fail", source), wait_for_completion=True,
                                 print_log=False, check_interval=1)  # fmt: skip
