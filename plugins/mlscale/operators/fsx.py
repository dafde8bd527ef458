"""Stage S3 data onto FSx for Lustre for training, and delete scratch file systems afterwards."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.operators.base_aws import AwsBaseOperator
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.sdk.exceptions import AirflowException, AirflowSkipException

from mlscale.hooks.fsx import FAILED, FSxHook
from mlscale.links import FileSystemLink
from mlscale.naming import resource_name
from mlscale.operators.deferral import default_deferrable
from mlscale.specs import rules
from mlscale.specs.rules import require
from mlscale.triggers.fsx import SETTLED, FSxLifecycleTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context

STAGE_TAG = "mlscale:stage"
TIERS = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}


class FSxLustreStageOperator(AwsBaseOperator[FSxHook]):
    """Create (or find, by tag) a Lustre file system linked to an S3 prefix, import it, wait until it is ready.

    Idempotent: the file system carries a tag naming the task run and every
    create call a ClientRequestToken derived from it, so a retried task picks
    up what the first try made. With `enabled` false it logs `skip_reason`
    (the storage advisor chose S3) and returns None. XCom: file system id,
    mount name and the directory training reads (a FileSystemDataSource path).
    """

    aws_hook_class = FSxHook
    operator_extra_links = (FileSystemLink(),)
    template_fields: Sequence[str] = (*aws_template_fields(), "data_repository_path", "enabled", "skip_reason",
                                      "storage_capacity_gib", "deployment_type", "per_unit_storage_throughput",
                                      "subnet_id", "security_group_ids", "poll_interval")  # fmt: skip
    ui_color = "#cce5ff"

    def __init__(self, *, data_repository_path: str, subnet_id: str, security_group_ids: list[str],
                 storage_capacity_gib: int = 1200, deployment_type: str = "SCRATCH_2",
                 per_unit_storage_throughput: int | None = None, file_system_path: str = "/data",
                 enabled: bool = True, skip_reason: str = "", deferrable: bool | None = None,
                 poll_interval: float = 30, **kwargs: Any):  # fmt: skip
        super().__init__(**kwargs)
        self.data_repository_path, self.subnet_id, self.security_group_ids = (
            data_repository_path, subnet_id, security_group_ids)  # fmt: skip
        self.storage_capacity_gib, self.deployment_type = storage_capacity_gib, deployment_type
        self.per_unit_storage_throughput, self.file_system_path = per_unit_storage_throughput, file_system_path
        self.enabled, self.skip_reason = enabled, skip_reason
        self.deferrable = default_deferrable() if deferrable is None else deferrable
        self.poll_interval = poll_interval

    def validate(self) -> None:
        rules.s3_uri(self.data_repository_path, "data_repository_path")
        require(self.deployment_type in ("SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"), "deployment_type",
                "must be SCRATCH_2, PERSISTENT_1 or PERSISTENT_2 (SCRATCH_1 takes no data repository association)",
                self.deployment_type)  # fmt: skip
        capacity = self.storage_capacity_gib
        require(isinstance(capacity, int) and (capacity == 1200 or (capacity > 0 and capacity % 2400 == 0)),
                "storage_capacity_gib", "must be 1200 or a multiple of 2400", capacity)  # fmt: skip
        if self.deployment_type in TIERS:
            require(self.per_unit_storage_throughput in TIERS[self.deployment_type], "per_unit_storage_throughput",
                    f"must be one of {TIERS[self.deployment_type]} for {self.deployment_type}",
                    self.per_unit_storage_throughput)  # fmt: skip
        require(bool(self.subnet_id), "subnet_id", "is required: Lustre lives in one subnet (one Availability Zone)")
        require(self.file_system_path.startswith("/") and self.file_system_path != "/", "file_system_path",
                "must be an absolute path below /", self.file_system_path)  # fmt: skip

    def execute(self, context: Context) -> dict[str, Any] | None:
        if self.enabled in (False, "False", "false"):
            # Succeed with nothing rather than skip: this task is the setup of the delete_fsx teardown,
            # and Airflow would skip everything downstream of a skipped setup.
            self.log.info("FSx staging not needed: %s", self.skip_reason or "disabled for this run")
            return None
        self.validate()
        return self._advance(context)

    def resume(self, context: Context, event: dict[str, Any] | None = None) -> dict[str, Any]:
        if event and event.get("lifecycle") in FAILED:
            raise AirflowException(f"FSx {event['kind']} {event['resource_id']} {event['lifecycle']}: "
                                   f"{event.get('failure') or 'no reason given'}")  # fmt: skip
        return self._advance(context)

    # -- the staging state machine: each call moves on from wherever the resources are --------------

    def _advance(self, context: Context) -> dict[str, Any]:
        key = self._stage_key(context)
        fs = self.hook.find_file_system(STAGE_TAG, key) or self._create_file_system(key)
        fs_id = fs["FileSystemId"]
        FileSystemLink.persist_for(context, self, file_system_id=fs_id)
        if fs["Lifecycle"] != "AVAILABLE":
            return self._wait(context, "file_system", fs_id, fs["Lifecycle"])
        association = self._association(fs_id, key)
        if association["Lifecycle"] != "AVAILABLE":
            return self._wait(context, "association", association["AssociationId"], association["Lifecycle"])
        task = self._import_task(fs_id, key)
        if task["Lifecycle"] != "SUCCEEDED":
            return self._wait(context, "task", task["TaskId"], task["Lifecycle"], task.get("FailureDetails"))
        mount = fs["LustreConfiguration"]["MountName"]
        result = {
            "file_system_id": fs_id,
            "mount_name": mount,
            "directory_path": f"/{mount}/{self.file_system_path.strip('/')}",
            "deployment_type": fs["LustreConfiguration"].get("DeploymentType"),
            "storage_capacity_gib": fs["StorageCapacity"],
            "import_task_id": task["TaskId"],
            "files_imported": task.get("Status", {}).get("SucceededCount", 0),
        }
        self.log.info("FSx for Lustre ready: %s", result)
        return result

    def _stage_key(self, context: Context) -> str:
        ti = context["ti"]
        return resource_name(ti.dag_id, ti.task_id, ti.run_id, getattr(ti, "map_index", -1))

    def _create_file_system(self, key: str) -> dict:
        lustre: dict[str, Any] = {"DeploymentType": self.deployment_type}
        if self.per_unit_storage_throughput:
            lustre["PerUnitStorageThroughput"] = self.per_unit_storage_throughput
        self.log.info("Creating FSx for Lustre %s, %s GiB", self.deployment_type, self.storage_capacity_gib)
        return self.hook.conn.create_file_system(
            ClientRequestToken=key, FileSystemType="LUSTRE", StorageCapacity=self.storage_capacity_gib,
            SubnetIds=[self.subnet_id], SecurityGroupIds=list(self.security_group_ids or []),
            LustreConfiguration=lustre, Tags=[{"Key": STAGE_TAG, "Value": key}],
        )["FileSystem"]  # fmt: skip

    def _association(self, fs_id: str, key: str) -> dict:
        existing = self.hook.conn.describe_data_repository_associations(
            Filters=[{"Name": "file-system-id", "Values": [fs_id]}])["Associations"]  # fmt: skip
        for association in existing:
            if association["FileSystemPath"] == self.file_system_path:
                return association
        return self.hook.conn.create_data_repository_association(
            FileSystemId=fs_id, FileSystemPath=self.file_system_path, DataRepositoryPath=self.data_repository_path,
            BatchImportMetaDataOnCreate=False, ClientRequestToken=f"{key[:58]}-dra",
        )["Association"]  # fmt: skip

    def _import_task(self, fs_id: str, key: str) -> dict:
        tasks = self.hook.conn.describe_data_repository_tasks(
            Filters=[{"Name": "file-system-id", "Values": [fs_id]}])["DataRepositoryTasks"]  # fmt: skip
        imports = [t for t in tasks if t["Type"] == "IMPORT_METADATA_FROM_REPOSITORY" and t["Lifecycle"] not in FAILED]
        if imports:
            return imports[-1]
        return self.hook.conn.create_data_repository_task(
            FileSystemId=fs_id, Type="IMPORT_METADATA_FROM_REPOSITORY", Paths=[self.file_system_path.strip("/")],
            Report={"Enabled": False}, ClientRequestToken=f"{key[:57]}-task",
        )["DataRepositoryTask"]  # fmt: skip

    def _wait(self, context: Context, kind: str, resource_id: str, lifecycle: str, failure: dict | None = None):
        if lifecycle in FAILED:
            raise AirflowException(f"FSx {kind} {resource_id} {lifecycle}: {(failure or {}).get('Message', '')}")
        if self.deferrable:
            self.defer(trigger=FSxLifecycleTrigger(kind, resource_id, self.poll_interval, self.aws_conn_id,
                                                   self.region_name, self.verify, self.botocore_config),
                       method_name="resume")  # fmt: skip
        while True:
            time.sleep(float(self.poll_interval))
            lifecycle, message = self.hook.lifecycle(kind, resource_id)
            if lifecycle in SETTLED[kind]:
                return self.resume(context, {"kind": kind, "resource_id": resource_id, "lifecycle": lifecycle,
                                             "failure": message})  # fmt: skip


class FSxDeleteFileSystemOperator(AwsBaseOperator[FSxHook]):
    """Delete a scratch file system after training (use it as a teardown: it runs even when training fails)."""

    aws_hook_class = FSxHook
    template_fields: Sequence[str] = (*aws_template_fields(), "file_system_id")

    def __init__(self, *, file_system_id: str | None, **kwargs: Any):
        super().__init__(**kwargs)
        self.file_system_id = file_system_id

    def execute(self, context: Context) -> None:
        if not self.file_system_id or self.file_system_id == "None":
            raise AirflowSkipException("no file system was staged for this run")
        try:
            self.hook.conn.delete_file_system(FileSystemId=self.file_system_id)
        except self.hook.conn.exceptions.FileSystemNotFound:
            self.log.info("File system %s is already gone.", self.file_system_id)
            return
        self.log.info("Deleting file system %s.", self.file_system_id)
