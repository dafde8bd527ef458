"""FSx patches: Lustre lifecycle, idempotent creates, data repository associations and tasks.

A file system is a directory under <emulator home>/fsx/<id>; an association
links a directory in it to an S3 prefix; an import task really copies the
objects in (on AWS it imports metadata and loads content lazily on first
read: here the first read is warm). Export writes files back to S3.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from moto.fsx import models as fsx_models
from moto.fsx import responses as fsx_responses

from mlscale_emulator import confine, settings
from mlscale_emulator.executors import s3io
from mlscale_emulator.fsx.models import (
    MAX_ASSOCIATIONS,
    TASK_TYPES,
    Association,
    FSxError,
    RepositoryTask,
    check_lustre_request,
    mount_name,
)
from mlscale_emulator.state import INTERRUPTED, backends_of, region_state
from mlscale_emulator.transitions import FSX_FILE_SYSTEM, Status, arm

CREATE_SECONDS = 0.5  # CREATING -> AVAILABLE (minutes on AWS)
_state = region_state("fsx")  # associations, tasks, and client tokens: (operation, token) -> resource id


def _table(self, name: str) -> dict:
    """One of this request's account and region's tables: associations, tasks or tokens."""
    return _state[self.current_account][self.region].table(name)


def local_root(file_system_id: str) -> Path:
    try:
        return confine.within(settings.current().home / "fsx", file_system_id)
    except confine.PathEscape as error:
        raise FSxError("BadRequest", f"FileSystemId: {error}") from None


def resolve_directory(file_system_id: str, directory_path: str) -> Path:
    """Where `/<mount name>/some/path` of a file system lives on this machine (never outside it)."""
    try:
        confine.relative_path(directory_path, "DirectoryPath")
    except confine.PathEscape as error:
        raise FSxError("BadRequest", str(error)) from None
    parts = directory_path.strip("/").split("/", 1)
    if not parts or parts[0] != mount_name(file_system_id):
        raise FSxError(
            "BadRequest", f"DirectoryPath {directory_path} must start with the mount name /{mount_name(file_system_id)}"
        )
    return association_directory(file_system_id, parts[1] if len(parts) > 1 else "")


def association_directory(file_system_id: str, file_system_path: str) -> Path:
    """The local directory of a path on the file system; FSxError when it would lead outside the file system
    (a symlink a job left there, say)."""
    root = local_root(file_system_id)
    root.mkdir(parents=True, exist_ok=True)
    relative = file_system_path.strip("/")
    try:
        return confine.within(root, relative) if relative else root.resolve()
    except confine.PathEscape as error:
        raise FSxError("BadRequest", f"FileSystemPath {file_system_path}: {error}") from None


def _later(seconds: float, action) -> None:
    timer = threading.Timer(seconds, action)
    timer.daemon = True
    timer.start()


def _error(self, error: FSxError):
    return json.dumps({"__type": error.code, "Message": error.message}), {"status": 400}


# -- file systems ---------------------------------------------------------------------------------


def _to_dict(self) -> dict[str, Any]:
    data = _moto_to_dict(self)
    data["Lifecycle"] = getattr(self, "lifecycle", "AVAILABLE")
    data["CreationTime"] = getattr(self, "created", time.time())
    data["OwnerId"] = settings.ACCOUNT_ID
    if self.file_system_type == "LUSTRE":
        lustre = dict(self.lustre_configuration or {})
        lustre.setdefault("DeploymentType", "SCRATCH_1")
        lustre["MountName"] = mount_name(self.file_system_id)
        data["LustreConfiguration"] = lustre
    return data


def _response_create_file_system(self):
    tokens = _table(self, "tokens")
    params = json.loads(self.body)
    token = params.get("ClientRequestToken")
    if token and ("fs", token) in tokens and tokens[("fs", token)] in self.fsx_backend.file_systems:
        return json.dumps({"FileSystem": self.fsx_backend.file_systems[tokens[("fs", token)]].to_dict()})
    if params.get("FileSystemType") == "LUSTRE":
        try:
            check_lustre_request(
                params.get("StorageCapacity", 0), params.get("SubnetIds", []), params.get("LustreConfiguration") or {}
            )
        except FSxError as error:
            return _error(self, error)
    body = json.loads(_moto_create_file_system(self))
    file_system = self.fsx_backend.file_systems[body["FileSystem"]["FileSystemId"]]
    file_system.lifecycle, file_system.created = "CREATING", time.time()
    arm(file_system)
    local_root(file_system.file_system_id).mkdir(parents=True, exist_ok=True)
    if token:
        tokens[("fs", token)] = file_system.file_system_id
    _later(CREATE_SECONDS, lambda: setattr(file_system, "lifecycle", "AVAILABLE"))
    return json.dumps({"FileSystem": file_system.to_dict()})


def _response_describe_file_systems(self):
    """As FSx answers: asking for an id that does not exist is FileSystemNotFound, not an empty list."""
    wanted = json.loads(self.body).get("FileSystemIds") or []
    missing = [fs for fs in wanted if fs not in self.fsx_backend.file_systems]
    if missing:
        return _error(self, FSxError("FileSystemNotFound", f"File system {missing[0]} was not found"))
    return _moto_describe_file_systems(self)


def _response_delete_file_system(self):
    associations = _table(self, "associations")
    file_system_id = json.loads(self.body).get("FileSystemId")
    result = _moto_delete_file_system(self)
    shutil.rmtree(local_root(file_system_id), ignore_errors=True)
    for association in [a for a in associations.values() if a.file_system_id == file_system_id]:
        associations.pop(association.association_id, None)
    return result


# -- data repository associations -------------------------------------------------------------------


def _file_system(self, file_system_id: str):
    if file_system_id not in self.fsx_backend.file_systems:
        raise FSxError("FileSystemNotFound", f"File system '{file_system_id}' does not exist.")
    return self.fsx_backend.file_systems[file_system_id]


def create_data_repository_association(self):
    associations = _table(self, "associations")
    tokens = _table(self, "tokens")
    params = json.loads(self.body)
    token = params.get("ClientRequestToken")
    if token and ("dra", token) in tokens and tokens[("dra", token)] in associations:
        return json.dumps({"Association": associations[tokens[("dra", token)]].to_dict()})
    try:
        file_system = _file_system(self, params.get("FileSystemId", ""))
        deployment = (file_system.lustre_configuration or {}).get("DeploymentType", "SCRATCH_1")
        if deployment == "SCRATCH_1":
            raise FSxError("BadRequest", "Data repository associations are not supported on SCRATCH_1 file systems")
        existing = [a for a in associations.values() if a.file_system_id == file_system.file_system_id]
        if len(existing) >= MAX_ASSOCIATIONS:
            raise FSxError("ServiceLimitExceeded", f"A file system has at most {MAX_ASSOCIATIONS} associations")
        path = params.get("FileSystemPath", "")
        try:
            confine.relative_path(path, "FileSystemPath")
        except confine.PathEscape as error:
            raise FSxError("BadRequest", str(error)) from None
        if any(path.startswith(a.file_system_path) or a.file_system_path.startswith(path) for a in existing):
            raise FSxError("BadRequest", f"FileSystemPath {path} overlaps an existing association")
        s3io.split_s3_uri(params.get("DataRepositoryPath", ""))
    except FSxError as error:
        return _error(self, error)
    except ValueError as error:
        return _error(self, FSxError("BadRequest", f"DataRepositoryPath: {error}"))
    association = Association(file_system.file_system_id, self.region, self.current_account, params)
    associations[association.association_id] = association
    if token:
        tokens[("dra", token)] = association.association_id

    def become_available():
        if association.batch_import:
            _import(association, self.region)
        association.lifecycle = "AVAILABLE"

    _later(CREATE_SECONDS, become_available)
    return json.dumps({"Association": association.to_dict()})


def describe_data_repository_associations(self):
    associations = _table(self, "associations")
    params = json.loads(self.body)
    wanted = params.get("AssociationIds")
    filters = {f["Name"]: f["Values"] for f in params.get("Filters", [])}
    found = [
        a
        for a in associations.values()
        if (not wanted or a.association_id in wanted)
        and ("file-system-id" not in filters or a.file_system_id in filters["file-system-id"])
    ]
    if wanted and len(found) < len(wanted):
        return _error(self, FSxError("DataRepositoryAssociationNotFound", "No association found for the given ids"))
    return json.dumps({"Associations": [a.to_dict() for a in found]})


def delete_data_repository_association(self):
    associations = _table(self, "associations")
    association_id = json.loads(self.body).get("AssociationId")
    association = associations.pop(association_id, None)
    if association is None:
        return _error(self, FSxError("DataRepositoryAssociationNotFound", f"Association {association_id} not found"))
    return json.dumps({"AssociationId": association_id, "Lifecycle": "DELETING"})


# -- data repository tasks ---------------------------------------------------------------------------


def _import(association: Association, region: str, task: RepositoryTask | None = None) -> None:
    s3 = settings.aws_client("s3", region)
    target = association_directory(association.file_system_id, association.file_system_path)
    keys = s3io.list_keys(s3, association.data_repository_path.rstrip("/") + "/")
    if task:
        task.total += len(keys)
    s3io.download_prefix(s3, association.data_repository_path.rstrip("/") + "/", target, keys)
    if task:
        task.succeeded += len(keys)


def _export(association: Association, region: str, task: RepositoryTask) -> None:
    s3 = settings.aws_client("s3", region)
    source = association_directory(association.file_system_id, association.file_system_path)
    files = [p for p in source.rglob("*") if p.is_file()] if source.exists() else []
    task.total += len(files)
    s3io.upload_directory(s3, source, association.data_repository_path.rstrip("/"))
    task.succeeded += len(files)


def _run_task(task: RepositoryTask, region: str, associations: dict[str, Association]) -> None:
    if task.lifecycle != "PENDING":  # canceled before it started
        return
    task.lifecycle, task.start = "EXECUTING", time.time()
    try:
        associations = [a for a in associations.values() if a.file_system_id == task.file_system_id]
        if task.paths:  # relative to the mount point, e.g. "shards" for the association at /shards
            wanted = [p.strip("/") for p in task.paths]
            associations = [
                a
                for a in associations
                if any(
                    w == ""
                    or (w + "/").startswith(a.file_system_path.strip("/") + "/")
                    or (a.file_system_path.strip("/") + "/").startswith(w + "/")
                    for w in wanted
                )
            ]
        for association in associations:
            if task.type == "IMPORT_METADATA_FROM_REPOSITORY":
                _import(association, region, task)
            elif task.type == "EXPORT_TO_REPOSITORY":
                _export(association, region, task)
        if task.lifecycle == "EXECUTING":  # not CANCELED meanwhile
            task.lifecycle = "SUCCEEDED"
    except Exception as error:  # the service reports the reason on the task (unless it was canceled meanwhile)
        if task.lifecycle == "EXECUTING":
            task.lifecycle, task.failure = "FAILED", str(error)
    task.end = time.time()


def create_data_repository_task(self):
    associations = _table(self, "associations")
    tasks = _table(self, "tasks")
    tokens = _table(self, "tokens")
    params = json.loads(self.body)
    token = params.get("ClientRequestToken")
    if token and ("task", token) in tokens and tokens[("task", token)] in tasks:
        return json.dumps({"DataRepositoryTask": tasks[tokens[("task", token)]].to_dict()})
    try:
        file_system = _file_system(self, params.get("FileSystemId", ""))
        if params.get("Type") not in TASK_TYPES:
            raise FSxError("BadRequest", f"Type must be one of {TASK_TYPES}")
        if params["Type"] in ("RELEASE_DATA_FROM_FILESYSTEM", "AUTO_RELEASE_DATA"):
            raise FSxError(
                "BadRequest",
                f"{params['Type']} is not emulated; use IMPORT_METADATA_FROM_REPOSITORY or EXPORT_TO_REPOSITORY",
            )
        if getattr(file_system, "lifecycle", "AVAILABLE") != "AVAILABLE":
            raise FSxError("BadRequest", f"File system {file_system.file_system_id} is not AVAILABLE")
        running = [
            t
            for t in tasks.values()
            if t.file_system_id == file_system.file_system_id and t.lifecycle in ("PENDING", "EXECUTING")
        ]
        if running:
            raise FSxError(
                "DataRepositoryTaskExecuting", f"Task {running[0].task_id} is still running on this file system"
            )
    except FSxError as error:
        return _error(self, error)
    task = RepositoryTask(file_system.file_system_id, self.region, self.current_account, params)
    tasks[task.task_id] = task
    if token:
        tokens[("task", token)] = task.task_id
    threading.Thread(target=_run_task, args=(task, self.region, associations), daemon=True).start()
    return json.dumps({"DataRepositoryTask": task.to_dict()})


def cancel_data_repository_task(self):
    """CancelDataRepositoryTask: files already imported stay; the task ends CANCELED."""
    tasks = _table(self, "tasks")
    task = tasks.get(json.loads(self.body).get("TaskId", ""))
    if task is None:
        return _error(self, FSxError("DataRepositoryTaskNotFound", "No task found for the given id"))
    if task.lifecycle not in ("PENDING", "EXECUTING"):
        return _error(self, FSxError("DataRepositoryTaskEnded", f"Task {task.task_id} is {task.lifecycle}"))
    task.lifecycle, task.end = "CANCELED", time.time()
    return json.dumps({"Lifecycle": "CANCELING", "TaskId": task.task_id})


def describe_data_repository_tasks(self):
    tasks = _table(self, "tasks")
    params = json.loads(self.body)
    wanted = params.get("TaskIds")
    filters = {f["Name"]: f["Values"] for f in params.get("Filters", [])}
    found = [
        t
        for t in tasks.values()
        if (not wanted or t.task_id in wanted)
        and ("file-system-id" not in filters or t.file_system_id in filters["file-system-id"])
    ]
    if wanted and len(found) < len(wanted):
        return _error(self, FSxError("DataRepositoryTaskNotFound", "No task found for the given ids"))
    return json.dumps({"DataRepositoryTasks": [t.to_dict() for t in found]})


_moto_to_dict = fsx_models.FileSystem.to_dict
_moto_create_file_system = fsx_responses.FSxResponse.create_file_system
_moto_delete_file_system = fsx_responses.FSxResponse.delete_file_system
_moto_describe_file_systems = fsx_responses.FSxResponse.describe_file_systems


def recover() -> None:
    """After a restore: a file system being created is there (its directory is); a running task ended."""
    for backend in backends_of(fsx_models.fsx_backends):
        for file_system in backend.file_systems.values():
            if getattr(file_system, "lifecycle", "AVAILABLE") == "CREATING":
                file_system.lifecycle = "AVAILABLE"
    for state in backends_of(_state):
        for association in state.table("associations").values():
            if association.lifecycle == "CREATING":
                association.lifecycle = "AVAILABLE"
        for task in state.table("tasks").values():
            if task.lifecycle in ("PENDING", "EXECUTING"):
                task.lifecycle, task.failure, task.end = "FAILED", INTERRUPTED, time.time()


def install() -> None:
    fsx_models.FileSystem.lifecycle = Status(FSX_FILE_SYSTEM)  # moto keeps none; ours, checked
    fsx_models.FileSystem.lifecycle.__set_name__(fsx_models.FileSystem, "lifecycle")
    fsx_models.FileSystem.to_dict = _to_dict
    response = fsx_responses.FSxResponse
    response.create_file_system = _response_create_file_system
    response.delete_file_system = _response_delete_file_system
    response.describe_file_systems = _response_describe_file_systems
    for handler in (
        create_data_repository_association,
        describe_data_repository_associations,
        delete_data_repository_association,
        create_data_repository_task,
        cancel_data_repository_task,
        describe_data_repository_tasks,
    ):
        setattr(response, handler.__name__, handler)
