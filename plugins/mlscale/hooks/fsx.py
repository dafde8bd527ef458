"""FSx for Lustre: the provider has no FSx hook; this one is AwsBaseHook's client plus the lifecycle reads."""

from __future__ import annotations

from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

FAILED = ("FAILED", "MISCONFIGURED", "MISCONFIGURED_UNAVAILABLE", "CANCELED")


class FSxHook(AwsBaseHook):
    def __init__(self, *args, **kwargs):
        kwargs["client_type"] = "fsx"
        super().__init__(*args, **kwargs)

    def file_system(self, file_system_id: str) -> dict:
        return self.conn.describe_file_systems(FileSystemIds=[file_system_id])["FileSystems"][0]

    def find_file_system(self, tag_key: str, tag_value: str) -> dict | None:
        """The newest live file system carrying the tag (how a retried task finds the one it made)."""
        matches = [
            fs for page in self.conn.get_paginator("describe_file_systems").paginate() for fs in page["FileSystems"]
            if {"Key": tag_key, "Value": tag_value} in fs.get("Tags", []) and fs.get("Lifecycle") not in ("DELETING", "FAILED")
        ]  # fmt: skip
        return max(matches, key=lambda fs: fs.get("CreationTime", 0), default=None)

    def association(self, association_id: str) -> dict:
        return self.conn.describe_data_repository_associations(AssociationIds=[association_id])["Associations"][0]

    def task(self, task_id: str) -> dict:
        return self.conn.describe_data_repository_tasks(TaskIds=[task_id])["DataRepositoryTasks"][0]

    def lifecycle(self, kind: str, resource_id: str) -> tuple[str, str | None]:
        """(Lifecycle, failure message) of a file system, association or task."""
        described = {"file_system": self.file_system, "association": self.association, "task": self.task}[kind](
            resource_id
        )
        return described["Lifecycle"], (described.get("FailureDetails") or {}).get("Message")
