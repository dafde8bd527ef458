"""Processing jobs: moto records them as already Completed; here their entrypoint really runs."""

from __future__ import annotations

from typing import Any

from moto.sagemaker import models as sm_models

from mlscale_emulator.executors.processing import ProcessingRun
from mlscale_emulator.sagemaker import requests
from mlscale_emulator.sagemaker.job_kinds import JobKindPatch
from mlscale_emulator.transitions import SAGEMAKER_JOB, Status, arm

_MotoProcessingJob = sm_models.FakeProcessingJob


class EmulatedProcessingJob(_MotoProcessingJob):
    processing_job_status = Status(SAGEMAKER_JOB)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.processing_job_status = "InProgress"
        self.processing_end_time = None
        self.processing_start_time = None
        self.processing_resources: dict = {}
        self.environment: dict[str, str] = {}
        self.failure_reason = None
        arm(self)
        self.exit_message = None


def _keep(job, response) -> None:
    job.processing_resources = response._get_param("ProcessingResources") or {}
    job.environment = response._get_param("Environment") or {}


PATCH = JobKindPatch(
    "processing", "FakeProcessingJob", EmulatedProcessingJob, ProcessingRun, requests.processing, _keep
)
install = PATCH.install
stop_all = PATCH.stop_all
recover = PATCH.recover
