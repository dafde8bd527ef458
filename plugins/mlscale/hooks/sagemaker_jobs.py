"""The SageMaker job kinds mlscale runs, described uniformly: describe, stop, status, logs."""

from __future__ import annotations

from dataclasses import dataclass

from botocore.exceptions import ClientError


@dataclass(frozen=True)
class JobKind:
    name: str  # "training"
    name_key: str  # "TrainingJobName"
    status_key: str  # "TrainingJobStatus"
    describe_call: str  # "describe_training_job"
    stop_call: str  # "stop_training_job"
    log_group: str
    console_path: str  # the SageMaker console's path for one job

    def describe(self, hook, job_name: str) -> dict:
        return getattr(hook.conn, self.describe_call)(**{self.name_key: job_name})

    def describe_or_none(self, hook, job_name: str) -> dict | None:
        try:
            return self.describe(hook, job_name)
        except ClientError as error:
            info = error.response.get("Error", {})
            # jobs answer ValidationException "Could not find ..."; compilation jobs ResourceNotFound
            if info.get("Code") == "ResourceNotFound" or (
                info.get("Code") == "ValidationException" and "find" in info.get("Message", "").lower()
            ):
                return None
            raise

    def stop(self, hook, job_name: str) -> None:
        getattr(hook.conn, self.stop_call)(**{self.name_key: job_name})

    def status_of(self, description: dict) -> str:
        """The job's status spelled as training jobs spell it (compilation jobs say COMPLETED, INPROGRESS)."""
        status = description[self.status_key]
        return status.capitalize() if status.isupper() else status


TRAINING = JobKind("training", "TrainingJobName", "TrainingJobStatus", "describe_training_job", "stop_training_job",
                   "/aws/sagemaker/TrainingJobs", "jobs")  # fmt: skip
PROCESSING = JobKind("processing", "ProcessingJobName", "ProcessingJobStatus", "describe_processing_job",
                     "stop_processing_job", "/aws/sagemaker/ProcessingJobs", "processing-jobs")  # fmt: skip
TRANSFORM = JobKind("transform", "TransformJobName", "TransformJobStatus", "describe_transform_job",
                    "stop_transform_job", "/aws/sagemaker/TransformJobs", "transform-jobs")  # fmt: skip
COMPILATION = JobKind("compilation", "CompilationJobName", "CompilationJobStatus", "describe_compilation_job",
                      "stop_compilation_job", "/aws/sagemaker/CompilationJobs", "compilation-jobs")  # fmt: skip
JOB_KINDS = {kind.name: kind for kind in (TRAINING, PROCESSING, TRANSFORM, COMPILATION)}
TERMINAL_STATES = ("Completed", "Failed", "Stopped")


def describe_progress(description: dict, previous: dict | None, kind: JobKind) -> list[str]:
    """Readable lines for what changed since `previous`: secondary statuses (training) or the status."""
    name = description.get(kind.name_key, "")
    transitions = description.get("SecondaryStatusTransitions")
    if transitions is not None:
        seen = len((previous or {}).get("SecondaryStatusTransitions") or [])
        return [f"{name}: {t['Status']} - {t.get('StatusMessage', '')}" for t in transitions[seen:]]
    status = kind.status_of(description)
    if previous is None or kind.status_of(previous) != status:
        return [f"{name}: {status}"]
    return []
