"""Compilation jobs: moto records them COMPLETED at once; here the model is really compiled."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from moto.sagemaker import models as sm_models
from moto.sagemaker import responses as sm_responses

from mlscale_emulator.executors.compilation import CompilationRun
from mlscale_emulator.sagemaker import requests
from mlscale_emulator.state import INTERRUPTED, backends_of
from mlscale_emulator.transitions import COMPILATION_JOB, Status, arm

_MotoCompilationJob = sm_models.CompilationJob


class EmulatedCompilationJob(_MotoCompilationJob):
    compilation_job_status = Status(COMPILATION_JOB)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.compilation_job_status = "INPROGRESS"
        self.compilation_end_time = None
        self.model_artifacts = {}
        self.model_digests = {}
        self.derived_information = {}
        self.inference_image = "emulated-neo-runtime"
        arm(self)

    def describe(self) -> dict[str, Any]:
        return {k: v for k, v in super().describe().items() if v not in (None, {}, "")}


def _response_create(self):
    requests.compilation(self._get_params())
    result = _moto_response_create(self)
    job = self.sagemaker_backend.compilation_jobs[self._get_param("CompilationJobName")]
    CompilationRun(job, region=self.region).start()
    return result


_moto_response_create = sm_responses.SageMakerResponse.create_compilation_job


def install() -> None:
    sm_models.CompilationJob = EmulatedCompilationJob
    sm_responses.SageMakerResponse.create_compilation_job = _response_create


def recover() -> None:
    """After a restore: a compilation that ran when the emulator stopped ends FAILED."""
    for backend in backends_of(sm_models.sagemaker_backends):
        for job in backend.compilation_jobs.values():
            if job.compilation_job_status in ("INPROGRESS", "STARTING", "STOPPING"):
                job.compilation_job_status, job.failure_reason = "FAILED", INTERRUPTED
                job.compilation_end_time = job.last_modified_time = datetime.now(UTC)
