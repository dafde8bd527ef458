"""Training jobs: moto records them as already Completed; here they really run.

Patches moto's SageMaker training job model (honest status, MetricDefinitions
and Environment kept) and, through JobKindPatch, starts a TrainingRun for each
new job.
"""

from __future__ import annotations

import copy
from typing import Any

from moto.sagemaker import models as sm_models

from mlscale_emulator import algorithms
from mlscale_emulator.executors.training import TrainingRun
from mlscale_emulator.sagemaker import requests
from mlscale_emulator.sagemaker.job_kinds import JobKindPatch
from mlscale_emulator.transitions import SAGEMAKER_JOB, Status, arm

_MotoTrainingJob = sm_models.FakeTrainingJob


class EmulatedTrainingJob(_MotoTrainingJob):
    """A training job that starts InProgress and keeps the request's MetricDefinitions."""

    training_job_status = Status(SAGEMAKER_JOB)

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
            {
                "Status": "Starting",
                "StartTime": self.creation_time,
                "StatusMessage": "Preparing the instances for training",
            }
        ]
        self.training_start_time = None
        self.training_end_time = None
        self.final_metric_data_list = []
        self.model_artifacts = None
        self.environment: dict[str, str] = {}
        self.retry_strategy = None
        self.failure_reason = None
        self.training_time_in_seconds = None
        self.billable_time_in_seconds = None
        arm(self)


def _keep(job, response) -> None:
    # moto's backend drops these request fields; the executor needs them.
    job.environment = response._get_param("Environment") or {}
    job.retry_strategy = response._get_param("RetryStrategy")
    # a built-in algorithm's metrics are defined by SageMaker, as DescribeTrainingJob shows them
    algorithm = algorithms.builtin(job.algorithm_specification.get("TrainingImage", ""), program_of(job))
    if algorithm and not job.algorithm_specification.get("MetricDefinitions"):
        job.algorithm_specification["MetricDefinitions"] = algorithms.metric_definitions(algorithm)


def program_of(job) -> str | None:
    """The training script a job names (SAGEMAKER_PROGRAM, or the sagemaker_program hyperparameter), if any."""
    return requests.program(job.environment, job.hyper_parameters)


PATCH = JobKindPatch("training", "FakeTrainingJob", EmulatedTrainingJob, TrainingRun, requests.training, _keep)
install = PATCH.install
stop_all = PATCH.stop_all
recover = PATCH.recover
