"""The run view reads a real training job's log through the AWS connection."""

import pytest

from tests.conftest import training_request, upload_source, wait_for_job

pytestmark = pytest.mark.emulator


def test_training_curves_from_the_jobs_log(emulator, clients):
    from mlscale.ui.curves import metric_series, training_log

    script = "for e in range(1, 4):\n    print(f'epoch={e} loss={1 / e:.3f}', flush=True)\n"
    source = upload_source(clients["s3"], {"train.py": script}, "code/curves/sourcedir.tar.gz")
    clients["sagemaker"].create_training_job(
        **training_request("curves-job", source, metrics={"loss": r"loss=([0-9.]+)"})
    )
    assert wait_for_job(clients["sagemaker"], "curves-job")["TrainingJobStatus"] == "Completed"
    lines, definitions = training_log("curves-job", "aws_default")
    assert metric_series(lines, definitions) == {"loss": [1.0, 0.5, 0.333]}
