"""A sensor for every stage's resource, over the same trigger the stages defer to.

For a job started elsewhere, or submit and wait as two tasks (the stage with
`wait_for_completion=False`, then its sensor, the provider's own pattern).
Deferrable by default (`[operators] default_deferrable` respected); also
`mode="poke"` and `mode="reschedule"`; `timeout` and `soft_fail` as for any
Airflow sensor. A resource that ends in failure fails the sensor with the
service's reason (skips it with soft_fail) without retrying: waiting again
would not change the end. While waiting, the resource's status changes and,
for SageMaker jobs, its CloudWatch log lines go to the task log. XCom: a
small summary of the resource (for a training job: name, model artifact,
final metrics).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
from airflow.providers.amazon.aws.sensors.base_aws import AwsBaseSensor
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.sdk.bases.sensor import PokeReturnValue
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from mlscale.operators.deferral import default_deferrable
from mlscale.waits import kinds
from mlscale.waits.kinds import ResourceKind, failure_message

if TYPE_CHECKING:
    from airflow.sdk import Context


class StageSensor(AwsBaseSensor[AwsBaseHook]):
    """Base: a subclass names its `kind` and the parameter (`id_field`) that holds the resource's id."""

    aws_hook_class = AwsBaseHook
    kind_of_sensor: ResourceKind
    id_field: str
    ui_color = "#e8f0fe"

    def __init__(self, *, deferrable: bool | None = None, **kwargs: Any):
        kwargs.setdefault("multiple_outputs", True)  # `sensor.output["model_artifact"]`, as for the stages
        super().__init__(**kwargs)
        self.deferrable = default_deferrable() if deferrable is None else deferrable
        self._watch = None

    @property
    def kind(self) -> ResourceKind:
        return self.kind_of_sensor

    @property
    def resource_id(self) -> str:
        return getattr(self, self.id_field)

    def execute(self, context: Context) -> Any:
        if self.deferrable:
            from mlscale.triggers.stage import StageTrigger

            self.defer(
                trigger=StageTrigger(
                    self.kind.name,
                    self.resource_id,
                    self.poke_interval,
                    False,
                    self.aws_conn_id,
                    self.region_name,
                    self.verify,
                    self.botocore_config,
                ),
                method_name="execute_complete",
                timeout=timedelta(seconds=self.timeout),
            )
        return super().execute(context)

    def _stage_hook(self):
        from mlscale.waits.watch import hook_for

        return hook_for(self.kind, self.aws_conn_id, self.region_name, self.verify, self.botocore_config)

    def poke(self, context: Context) -> bool | PokeReturnValue:
        from mlscale.waits.watch import ResourceWatch

        if self._watch is None:
            # rescheduled, each poke is a new process: show the log lines since the previous poke, not all again
            since = int((time.time() - self.poke_interval) * 1000) if self.reschedule else None
            self._watch = ResourceWatch(
                self.kind,
                self.resource_id,
                self._stage_hook(),
                log_since_ms=since,
                interval=float(self.poke_interval),
                full=True,
            )
        description, lines = self._watch.poll()
        for line in lines:
            self.log.info(line)
        if not self.kind.settled(description):
            return False
        event = self.kind.event(self.resource_id, description)
        if event["status"] != "success":
            raise AirflowFailException(failure_message(event))
        return PokeReturnValue(True, self.kind.summary(description))

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> dict[str, Any]:
        if not event or event.get("status") != "success":
            raise AirflowException(failure_message(event) if event else "The trigger returned no event")
        return self.kind.summary(self.kind.describe(self._stage_hook().conn, self.resource_id))


def _sensor(name: str, kind: ResourceKind, id_field: str, doc: str) -> type[StageSensor]:
    def __init__(self, **kwargs: Any):  # Airflow refuses a call without the id ("missing keyword argument")
        setattr(self, id_field, kwargs.pop(id_field))
        StageSensor.__init__(self, **kwargs)

    # the id as a named parameter: Airflow's `.partial(...).expand(job_name=...)` accepts only those it can see
    __init__.__signature__ = inspect.Signature(
        [
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter(id_field, inspect.Parameter.KEYWORD_ONLY),
            inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD),
        ]
    )
    namespace = {
        "__init__": __init__,
        "__doc__": doc,
        "__module__": __name__,
        "kind_of_sensor": kind,
        "id_field": id_field,
        "template_fields": (*aws_template_fields(), id_field),
    }
    return type(name, (StageSensor,), namespace)


TrainingJobSensor = _sensor(
    "TrainingJobSensor",
    kinds.TRAINING,
    "job_name",
    "Wait for a SageMaker training job (`job_name`); XCom: model artifact, final metrics.",
)
ProcessingJobSensor = _sensor(
    "ProcessingJobSensor",
    kinds.PROCESSING,
    "job_name",
    "Wait for a SageMaker processing job (`job_name`); XCom: its S3 outputs.",
)
TransformJobSensor = _sensor(
    "TransformJobSensor",
    kinds.TRANSFORM,
    "job_name",
    "Wait for a SageMaker Batch Transform job (`job_name`); XCom: its output path.",
)
CompilationJobSensor = _sensor(
    "CompilationJobSensor",
    kinds.COMPILATION,
    "job_name",
    "Wait for a SageMaker Neo compilation job (`job_name`); XCom: the compiled artifact.",
)
EndpointSensor = _sensor(
    "EndpointSensor",
    kinds.ENDPOINT,
    "endpoint_name",
    "Wait until an endpoint (`endpoint_name`) is InService; RollingBack is not an end.",
)
FSxFileSystemSensor = _sensor(
    "FSxFileSystemSensor",
    kinds.FSX_FILE_SYSTEM,
    "file_system_id",
    "Wait until an FSx file system (`file_system_id`) is AVAILABLE.",
)
FSxDataRepositoryTaskSensor = _sensor(
    "FSxDataRepositoryTaskSensor",
    kinds.FSX_TASK,
    "task_id",
    "Wait for an FSx data repository task (`task_id`), e.g. an import, to succeed.",
)
BatchJobSensor = _sensor(
    "BatchJobSensor",
    kinds.BATCH_JOB,
    "job_id",
    "Wait for an AWS Batch job (`job_id`), e.g. a multi-node training job; XCom: its summary.",
)


class GreengrassDeploymentSensor(StageSensor):
    """Wait for a Greengrass v2 deployment (`deployment_id`) to complete, or, with `thing_name`, for one core
    device's share of it to succeed."""

    id_field = "deployment_id"
    template_fields: Sequence[str] = (*aws_template_fields(), "deployment_id", "thing_name")

    def __init__(self, *, deployment_id: str, thing_name: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.deployment_id, self.thing_name = deployment_id, thing_name

    @property
    def kind(self) -> ResourceKind:
        return kinds.GREENGRASS_DEVICE if self.thing_name else kinds.GREENGRASS_DEPLOYMENT

    @property
    def resource_id(self) -> str:
        if self.thing_name:
            return kinds.device_deployment_id(self.thing_name, self.deployment_id)
        return self.deployment_id


__all__ = [
    "BatchJobSensor",
    "CompilationJobSensor",
    "EndpointSensor",
    "FSxDataRepositoryTaskSensor",
    "FSxFileSystemSensor",
    "GreengrassDeploymentSensor",
    "ProcessingJobSensor",
    "StageSensor",
    "TrainingJobSensor",
    "TransformJobSensor",
]
