"""Training jobs: moto records them as already Completed; here they really run.

Patches moto's SageMaker training job model and backend (honest status,
duplicate names rejected, StopTrainingJob, Environment kept) and starts a
TrainingRun for each new job.
"""

from __future__ import annotations

import copy
from typing import Any

from moto.sagemaker import models as sm_models
from moto.sagemaker import responses as sm_responses
from moto.sagemaker.exceptions import ValidationError
from moto.core.responses import ActionResult, EmptyResult

from mlscale.emulator.executors.training import TrainingRun
from mlscale.emulator.sagemaker import requests

_runs: dict[str, TrainingRun] = {}
_MotoTrainingJob = sm_models.FakeTrainingJob


class ResourceInUse(ValidationError):
    code = "ResourceInUse"


class EmulatedTrainingJob(_MotoTrainingJob):
    """A training job that starts InProgress and keeps the request's MetricDefinitions."""

    def __init__(self, *args: Any, **kwargs: Any):
        spec = kwargs.get("algorithm_specification") or {}
        metric_definitions = copy.deepcopy(spec.get("MetricDefinitions"))
        super().__init__(*args, **kwargs)
        if metric_definitions:
            self.algorithm_specification["MetricDefinitions"] = metric_definitions
        else:
            self.algorithm_specification.pop("MetricDefinitions", None)
        self.training_job_status = "InProgress"
        self.secondary_status = "Starting"
        self.secondary_status_transitions = [
            {"Status": "Starting", "StartTime": self.creation_time,
             "StatusMessage": "Preparing the instances for training"}
        ]  # fmt: skip
        self.training_start_time = None
        self.training_end_time = None
        self.final_metric_data_list = []
        self.model_artifacts = None
        self.environment: dict[str, str] = {}
        self.retry_strategy = None
        self.failure_reason = None
        self.training_time_in_seconds = None
        self.billable_time_in_seconds = None


def _create_training_job(self, training_job_name: str, **kwargs: Any):
    if training_job_name in self.training_jobs:
        arn = EmulatedTrainingJob.arn_formatter(training_job_name, self.account_id, self.region_name)
        raise ResourceInUse(f"Training job names must be unique within an AWS account and region, "
                            f"and a training job with this name already exists ({arn})")  # fmt: skip
    return _moto_create_training_job(self, training_job_name=training_job_name, **kwargs)


def _stop_training_job(self, training_job_name: str) -> None:
    self.describe_training_job(training_job_name)  # raises the usual not-found error
    job = self.training_jobs[training_job_name]
    if job.training_job_status != "InProgress":
        raise ValidationError(
            f"The request was rejected because the training job is in status {job.training_job_status}."
        )
    _runs[training_job_name].stop()


def _response_create_training_job(self) -> ActionResult:
    requests.training(self._get_params())
    result = _moto_response_create(self)
    job = self.sagemaker_backend.training_jobs[self._get_param("TrainingJobName")]
    # moto's backend drops these request fields; the executor needs them.
    job.environment = self._get_param("Environment") or {}
    job.retry_strategy = self._get_param("RetryStrategy")
    run = TrainingRun(job, region=self.region)
    _runs[job.training_job_name] = run
    run.start()
    return result


def _response_stop_training_job(self) -> EmptyResult:
    self.sagemaker_backend.stop_training_job(self._get_param("TrainingJobName"))
    return EmptyResult()


_moto_create_training_job = sm_models.SageMakerModelBackend.create_training_job
_moto_response_create = sm_responses.SageMakerResponse.create_training_job


def install() -> None:
    sm_models.FakeTrainingJob = EmulatedTrainingJob
    sm_models.SageMakerModelBackend.create_training_job = _create_training_job
    sm_models.SageMakerModelBackend.stop_training_job = _stop_training_job
    sm_responses.SageMakerResponse.create_training_job = _response_create_training_job
    sm_responses.SageMakerResponse.stop_training_job = _response_stop_training_job


def stop_all() -> None:
    """Stop every running job (the server is shutting down)."""
    for run in list(_runs.values()):
        if run.job.training_job_status == "InProgress":
            run.stop()
    for run in list(_runs.values()):
        run.thread.join(timeout=150)
