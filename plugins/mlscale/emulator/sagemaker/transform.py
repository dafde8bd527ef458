"""Transform jobs: moto records them as already Completed; here a model server really transforms the input."""

from __future__ import annotations

from typing import Any

from moto.core.responses import ActionResult, EmptyResult
from moto.sagemaker import models as sm_models
from moto.sagemaker import responses as sm_responses
from moto.sagemaker.exceptions import ValidationError

from mlscale.emulator.executors.transform import TransformRun
from mlscale.emulator.sagemaker.training import ResourceInUse
from mlscale.emulator.sagemaker import requests

_runs: dict[str, TransformRun] = {}


class EmulatedTransformJob(sm_models.FakeTransformJob):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.transform_job_status = "InProgress"
        self.transform_end_time = None


def _create(self, transform_job_name: str, **kwargs: Any):
    if transform_job_name in self.transform_jobs:
        raise ResourceInUse(f"Job name must be unique within an AWS account and region, and a job with this name "
                            f"already exists ({transform_job_name})")  # fmt: skip
    return _moto_create(self, transform_job_name=transform_job_name, **kwargs)


def _stop(self, transform_job_name: str) -> None:
    self.describe_transform_job(transform_job_name)
    job = self.transform_jobs[transform_job_name]
    if job.transform_job_status != "InProgress":
        raise ValidationError(f"The request was rejected because the transform job is in status "
                              f"{job.transform_job_status}.")  # fmt: skip
    _runs[transform_job_name].stop()


def _response_create(self) -> ActionResult:
    requests.transform(self._get_params())
    result = _moto_response_create(self)
    job = self.sagemaker_backend.transform_jobs[self._get_param("TransformJobName")]
    run = TransformRun(job, region=self.region)
    _runs[job.transform_job_name] = run
    run.start()
    return result


def _response_stop(self) -> EmptyResult:
    self.sagemaker_backend.stop_transform_job(self._get_param("TransformJobName"))
    return EmptyResult()


_moto_create = sm_models.SageMakerModelBackend.create_transform_job
_moto_response_create = sm_responses.SageMakerResponse.create_transform_job


def stop_all() -> None:
    """Stop every running transform job (the server is shutting down)."""
    for run in list(_runs.values()):
        if run.job.transform_job_status == "InProgress":
            run.stop()


def install() -> None:
    sm_models.FakeTransformJob = EmulatedTransformJob
    sm_models.SageMakerModelBackend.create_transform_job = _create
    sm_models.SageMakerModelBackend.stop_transform_job = _stop
    sm_responses.SageMakerResponse.create_transform_job = _response_create
    sm_responses.SageMakerResponse.stop_transform_job = _response_stop
