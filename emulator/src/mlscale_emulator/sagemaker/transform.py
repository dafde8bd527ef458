"""Transform jobs: moto records them as already Completed; here a model server really transforms the input."""

from __future__ import annotations

from typing import Any

from moto.sagemaker import models as sm_models

from mlscale_emulator.executors.transform import TransformRun
from mlscale_emulator.sagemaker import requests
from mlscale_emulator.sagemaker.job_kinds import JobKindPatch
from mlscale_emulator.transitions import SAGEMAKER_JOB, Status, arm


class EmulatedTransformJob(sm_models.FakeTransformJob):
    transform_job_status = Status(SAGEMAKER_JOB)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.transform_job_status = "InProgress"
        self.transform_end_time = None
        arm(self)


PATCH = JobKindPatch("transform", "FakeTransformJob", EmulatedTransformJob, TransformRun, requests.transform)
install = PATCH.install
stop_all = PATCH.stop_all
recover = PATCH.recover
