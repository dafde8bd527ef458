"""Stage S3 data onto FSx for Lustre for training, and delete scratch file systems afterwards."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.operators.base_aws import AwsBaseOperator
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.sdk.exceptions import AirflowSkipException

from mlscale.hooks.fsx import FSxHook
from mlscale.links import FileSystemLink
from mlscale.naming import resource_name
from mlscale.operators.stage import StageOperator, Wait
from mlscale.specs.fsx import FSxLustreSpec
from mlscale.waits.kinds import FSX_ASSOCIATION, FSX_FILE_SYSTEM, FSX_TASK

if TYPE_CHECKING:
    from airflow.sdk import Context

STAGE_TAG = "mlscale:stage"


class FSxLustreStageOperator(StageOperator):
    """Create (or find, by tag) a Lustre file system linked to an S3 prefix, import it, wait until it is ready.

    Idempotent: the file system carries a tag naming the task run and every
    create call a ClientRequestToken derived from it, so a retried task picks
    up what the first try made. Three waits (file system, association, import
    task), each deferred; killing the task while the file system is created
    deletes it, while the import runs cancels it. With `enabled` false it logs
    `skip_reason` (the storage advisor chose S3) and returns no file system. XCom: file
    system id, mount name and the directory training reads (a
    FileSystemDataSource path).
    """

    aws_hook_class = FSxHook
    operator_extra_links = (FileSystemLink(),)
    ui_color = "#cce5ff"

    def __init__(self, *, spec: FSxLustreSpec, **kwargs: Any):
        super().__init__(spec=spec, **kwargs)

    def not_needed(self) -> dict[str, Any]:
        # Succeed with no file system rather than skip: this task is the setup of the delete_fsx
        # teardown, and Airflow would skip everything downstream of a skipped setup.
        return {"file_system_id": None, "skip_reason": self.skip_reason}

    def advance(self, context: Context, settled: dict[str, Any] | None) -> dict[str, Any] | Wait:
        key = self._stage_key(context)
        fs = self.hook.find_file_system(STAGE_TAG, key) or self._create_file_system(key)
        fs_id = fs["FileSystemId"]
        FileSystemLink.persist_for(context, self, file_system_id=fs_id)
        if fs["Lifecycle"] != "AVAILABLE":
            return Wait(FSX_FILE_SYSTEM, fs_id)
        association = self._association(fs_id, key)
        if association["Lifecycle"] != "AVAILABLE":
            return Wait(FSX_ASSOCIATION, association["AssociationId"], stop_on_kill=False)
        task = self._import_task(fs_id, key)
        if task["Lifecycle"] != "SUCCEEDED":
            return Wait(FSX_TASK, task["TaskId"])
        mount = fs["LustreConfiguration"]["MountName"]
        result = {
            "file_system_id": fs_id,
            "mount_name": mount,
            "directory_path": f"/{mount}/{self.spec.file_system_path.strip('/')}",
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
        spec = self.spec
        lustre: dict[str, Any] = {"DeploymentType": spec.deployment_type}
        if spec.per_unit_storage_throughput:
            lustre["PerUnitStorageThroughput"] = spec.per_unit_storage_throughput
        self.log.info("Creating FSx for Lustre %s, %s GiB", spec.deployment_type, spec.storage_capacity_gib)
        return self.hook.conn.create_file_system(
            ClientRequestToken=key,
            FileSystemType="LUSTRE",
            StorageCapacity=spec.storage_capacity_gib,
            SubnetIds=[spec.subnet_id],
            SecurityGroupIds=list(spec.security_group_ids or []),
            LustreConfiguration=lustre,
            Tags=[{"Key": STAGE_TAG, "Value": key}],
        )["FileSystem"]

    def _association(self, fs_id: str, key: str) -> dict:
        existing = self.hook.conn.describe_data_repository_associations(
            Filters=[{"Name": "file-system-id", "Values": [fs_id]}]
        )["Associations"]
        for association in existing:
            if association["FileSystemPath"] == self.spec.file_system_path:
                return association
        return self.hook.conn.create_data_repository_association(
            FileSystemId=fs_id,
            FileSystemPath=self.spec.file_system_path,
            DataRepositoryPath=self.spec.data_repository_path,
            BatchImportMetaDataOnCreate=False,
            ClientRequestToken=f"{key[:58]}-dra",
        )["Association"]

    def _import_task(self, fs_id: str, key: str) -> dict:
        tasks = self.hook.conn.describe_data_repository_tasks(Filters=[{"Name": "file-system-id", "Values": [fs_id]}])[
            "DataRepositoryTasks"
        ]
        imports = [
            t for t in tasks if t["Type"] == "IMPORT_METADATA_FROM_REPOSITORY" and t["Lifecycle"] not in FSX_TASK.failed
        ]
        if imports:
            return imports[-1]
        return self.hook.conn.create_data_repository_task(
            FileSystemId=fs_id,
            Type="IMPORT_METADATA_FROM_REPOSITORY",
            Paths=[self.spec.file_system_path.strip("/")],
            Report={"Enabled": False},
            ClientRequestToken=f"{key[:57]}-task",
        )["DataRepositoryTask"]


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
