"""Processing jobs: moto records them as already Completed; here their entrypoint really runs."""

from __future__ import annotations

from typing import Any

from moto.core.responses import ActionResult, EmptyResult
from moto.sagemaker import models as sm_models
from moto.sagemaker import responses as sm_responses
from moto.sagemaker.exceptions import ValidationError

from mlscale.emulator.executors.processing import ProcessingRun
from mlscale.emulator.sagemaker.training import ResourceInUse
from mlscale.emulator.sagemaker import requests

_runs: dict[str, ProcessingRun] = {}
_MotoProcessingJob = sm_models.FakeProcessingJob


class EmulatedProcessingJob(_MotoProcessingJob):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.processing_job_status = "InProgress"
        self.processing_end_time = None
        self.processing_start_time = None
        self.processing_resources: dict = {}
        self.environment: dict[str, str] = {}
        self.failure_reason = None
        self.exit_message = None


def _create_processing_job(self, processing_job_name: str, **kwargs: Any):
    if processing_job_name in self.processing_jobs:
        raise ResourceInUse(f"Job name must be unique within an AWS account and region, and a job with this name "
                            f"already exists ({processing_job_name})")  # fmt: skip
    return _moto_create(self, processing_job_name=processing_job_name, **kwargs)


def _stop_processing_job(self, processing_job_name: str) -> None:
    self.describe_processing_job(processing_job_name)  # the usual not-found error
    job = self.processing_jobs[processing_job_name]
    if job.processing_job_status != "InProgress":
        raise ValidationError(f"The request was rejected because the processing job is in status "
                              f"{job.processing_job_status}.")  # fmt: skip
    _runs[processing_job_name].stop()


def _response_create(self) -> ActionResult:
    requests.processing(self._get_params())
    result = _moto_response_create(self)
    job = self.sagemaker_backend.processing_jobs[self._get_param("ProcessingJobName")]
    job.processing_resources = self._get_param("ProcessingResources") or {}
    job.environment = self._get_param("Environment") or {}
    run = ProcessingRun(job, region=self.region)
    _runs[job.processing_job_name] = run
    run.start()
    return result


def _response_stop(self) -> EmptyResult:
    self.sagemaker_backend.stop_processing_job(self._get_param("ProcessingJobName"))
    return EmptyResult()


_moto_create = sm_models.SageMakerModelBackend.create_processing_job
_moto_response_create = sm_responses.SageMakerResponse.create_processing_job


def install() -> None:
    sm_models.FakeProcessingJob = EmulatedProcessingJob
    sm_models.SageMakerModelBackend.create_processing_job = _create_processing_job
    sm_models.SageMakerModelBackend.stop_processing_job = _stop_processing_job
    sm_responses.SageMakerResponse.create_processing_job = _response_create
    sm_responses.SageMakerResponse.stop_processing_job = _response_stop


def stop_all() -> None:
    for run in list(_runs.values()):
        if run.job.processing_job_status == "InProgress":
            run.stop()
    for run in list(_runs.values()):
        run.thread.join(timeout=150)
