"""Patch one SageMaker job kind into moto: moto records jobs as already finished; here each really runs.

Training, processing and transform jobs share this life: a second job with the same name is refused
(ResourceInUse, as SageMaker answers), the request is checked first (mlscale_emulator.sagemaker.requests),
Create starts an executor run, Stop is refused unless the job is InProgress, and shutdown stops every
running job. A module says only its model class, its executor, its request check and what to keep from
the request that moto's backend drops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from moto.core.responses import ActionResult, EmptyResult
from moto.sagemaker import models as sm_models
from moto.sagemaker import responses as sm_responses
from moto.sagemaker.exceptions import ValidationError

from mlscale_emulator.sagemaker import quotas
from mlscale_emulator.state import INTERRUPTED, backends_of


class ResourceInUse(ValidationError):
    code = "ResourceInUse"


@dataclass
class JobKindPatch:
    kind: str  # "training": create_training_job, training_jobs, training_job_status, TrainingJobName
    model_class_name: str  # moto's class the emulated one replaces: "FakeTrainingJob"
    model_class: type
    run_class: type  # the executor: run_class(job, region=...).start() / .stop() / .thread
    check: Callable[[dict], None]  # the request rules moto does not check
    keep: Callable[[Any, Any], None] = lambda job, response: None  # copy request fields moto's backend drops
    runs: dict[str, Any] = field(default_factory=dict)  # job ARN -> its executor run (never saved)

    @property
    def name_key(self) -> str:
        return f"{self.kind.capitalize()}JobName"

    def _jobs(self, backend) -> dict:
        return getattr(backend, f"{self.kind}_jobs")

    def install(self) -> None:
        patch = self
        moto_create = getattr(sm_models.SageMakerModelBackend, f"create_{self.kind}_job")
        moto_response_create = getattr(sm_responses.SageMakerResponse, f"create_{self.kind}_job")

        def create(backend, *args: Any, **kwargs: Any):
            name = args[0] if args else kwargs[f"{patch.kind}_job_name"]
            if name in patch._jobs(backend):
                arn = patch._jobs(backend)[name].arn
                raise ResourceInUse(
                    f"Job names must be unique within an AWS account and region, and a "
                    f"{patch.kind} job with this name already exists ({arn})"
                )
            return moto_create(backend, *args, **kwargs)

        def stop(backend, *args: Any, **kwargs: Any) -> None:
            name = args[0] if args else kwargs[f"{patch.kind}_job_name"]
            getattr(backend, f"describe_{patch.kind}_job")(name)  # the usual not-found error
            status = getattr(patch._jobs(backend)[name], f"{patch.kind}_job_status")
            if status != "InProgress":
                raise ValidationError(f"The request was rejected because the {patch.kind} job is in status {status}.")
            patch.runs[patch._jobs(backend)[name].arn].stop()

        def response_create(response) -> ActionResult:
            params = response._get_params()
            patch.check(params)
            with quotas.lock:  # the instances counted are held once the job exists
                quotas.check_job(patch.kind, params, patch._jobs(response.sagemaker_backend))
                result = moto_response_create(response)
            job = patch._jobs(response.sagemaker_backend)[response._get_param(patch.name_key)]
            patch.keep(job, response)
            run = patch.run_class(job, region=response.region)
            patch.runs[job.arn] = run
            run.start()
            return result

        def response_stop(response) -> EmptyResult:
            getattr(response.sagemaker_backend, f"stop_{patch.kind}_job")(response._get_param(patch.name_key))
            return EmptyResult()

        setattr(sm_models, self.model_class_name, self.model_class)
        setattr(sm_models.SageMakerModelBackend, f"create_{self.kind}_job", create)
        setattr(sm_models.SageMakerModelBackend, f"stop_{self.kind}_job", stop)
        setattr(sm_responses.SageMakerResponse, f"create_{self.kind}_job", response_create)
        setattr(sm_responses.SageMakerResponse, f"stop_{self.kind}_job", response_stop)

    def stop_all(self, join_seconds: float = 10) -> None:
        """Stop every running job (the server is shutting down) and wait for their processes."""
        running = [r for r in self.runs.values() if getattr(r.job, f"{self.kind}_job_status") == "InProgress"]
        for run in running:
            run.stop()
        for run in running:
            thread = getattr(run, "thread", None)
            if thread is not None:
                thread.join(timeout=join_seconds)

    def recover(self) -> None:
        """After a restore: a job that ran when the emulator stopped ends Failed (its processes are gone)."""
        now = datetime.now(UTC)
        for backend in backends_of(sm_models.sagemaker_backends):
            for job in self._jobs(backend).values():
                if getattr(job, f"{self.kind}_job_status") not in ("InProgress", "Stopping"):
                    continue
                setattr(job, f"{self.kind}_job_status", "Failed")
                setattr(job, f"{self.kind}_end_time", now)
                job.failure_reason = INTERRUPTED
                if getattr(job, "secondary_status_transitions", None) is not None:
                    job.secondary_status = "Failed"
                    job.secondary_status_transitions[-1].setdefault("EndTime", now)
                    job.secondary_status_transitions.append(
                        {"Status": "Failed", "StartTime": now, "EndTime": now, "StatusMessage": INTERRUPTED}
                    )
