"""Data repository associations and tasks (moto has neither), and Lustre details moto leaves out."""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import Any

from mlscale_emulator.transitions import FSX_ASSOCIATION, FSX_TASK, Status, arm

STORAGE_RULE = "1200 GiB, 2400 GiB, or a multiple of 2400 GiB"
SSD_DEPLOYMENTS = ("SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2")
TASK_TYPES = (
    "EXPORT_TO_REPOSITORY",
    "IMPORT_METADATA_FROM_REPOSITORY",
    "RELEASE_DATA_FROM_FILESYSTEM",
    "AUTO_RELEASE_DATA",
)
MAX_ASSOCIATIONS = 8


class FSxError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def check_lustre_request(storage_capacity: int, subnet_ids: list[str], lustre: dict[str, Any]) -> None:
    deployment = lustre.get("DeploymentType", "SCRATCH_1")
    if deployment in SSD_DEPLOYMENTS and not (storage_capacity == 1200 or storage_capacity % 2400 == 0):
        raise FSxError(
            "InvalidParameterValue",
            f"Storage capacity {storage_capacity} GiB is not valid for {deployment}: use {STORAGE_RULE}",
        )
    if len(subnet_ids or []) != 1:
        raise FSxError("InvalidParameterValue", "Lustre file systems take exactly one subnet (one Availability Zone)")
    tiers = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}
    if deployment in tiers and lustre.get("PerUnitStorageThroughput") not in tiers[deployment]:
        raise FSxError(
            "InvalidParameterValue", f"PerUnitStorageThroughput for {deployment} must be one of {tiers[deployment]}"
        )


def mount_name(file_system_id: str) -> str:
    return hashlib.sha256(file_system_id.encode()).hexdigest()[:8]


class Association:
    lifecycle = Status(FSX_ASSOCIATION)

    def __init__(self, file_system_id: str, region: str, account: str, request: dict[str, Any]):
        self.association_id = f"dra-{uuid.uuid4().hex[:17]}"
        self.file_system_id = file_system_id
        self.file_system_path = request["FileSystemPath"]
        self.data_repository_path = request["DataRepositoryPath"]
        self.batch_import = bool(request.get("BatchImportMetaDataOnCreate", False))
        self.chunk_size = request.get("ImportedFileChunkSize", 1024)
        self.s3 = request.get("S3")
        self.tags = request.get("Tags", [])
        self.lifecycle = "CREATING"
        self.failure: str | None = None
        self.created = time.time()
        self.arn = f"arn:aws:fsx:{region}:{account}:association/{file_system_id}/{self.association_id}"
        arm(self)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "AssociationId": self.association_id,
            "ResourceARN": self.arn,
            "FileSystemId": self.file_system_id,
            "Lifecycle": self.lifecycle,
            "FileSystemPath": self.file_system_path,
            "DataRepositoryPath": self.data_repository_path,
            "BatchImportMetaDataOnCreate": self.batch_import,
            "ImportedFileChunkSize": self.chunk_size,
            "CreationTime": self.created,
            "Tags": self.tags,
        }
        if self.s3:
            data["S3"] = self.s3
        if self.failure:
            data["FailureDetails"] = {"Message": self.failure}
        return data


class RepositoryTask:
    lifecycle = Status(FSX_TASK)

    def __init__(self, file_system_id: str, region: str, account: str, request: dict[str, Any]):
        self.task_id = f"task-{uuid.uuid4().hex[:17]}"
        self.file_system_id = file_system_id
        self.type = request["Type"]
        self.paths = request.get("Paths", [])
        self.report = request.get("Report", {"Enabled": False})
        self.tags = request.get("Tags", [])
        self.lifecycle = "PENDING"
        self.created = time.time()
        self.start: float | None = None
        self.end: float | None = None
        self.failure: str | None = None
        self.total = self.succeeded = self.failed = 0
        self.arn = f"arn:aws:fsx:{region}:{account}:task/{self.task_id}"
        arm(self)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "TaskId": self.task_id,
            "Lifecycle": self.lifecycle,
            "Type": self.type,
            "CreationTime": self.created,
            "ResourceARN": self.arn,
            "Tags": self.tags,
            "FileSystemId": self.file_system_id,
            "Paths": self.paths,
            "Report": self.report,
            "Status": {
                "TotalCount": self.total,
                "SucceededCount": self.succeeded,
                "FailedCount": self.failed,
                "LastUpdatedTime": self.end or self.start or self.created,
            },
        }
        if self.start:
            data["StartTime"] = self.start
        if self.end:
            data["EndTime"] = self.end
        if self.failure:
            data["FailureDetails"] = {"Message": self.failure}
        return data
