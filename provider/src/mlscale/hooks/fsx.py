"""FSx for Lustre: the provider has no FSx hook; this one is AwsBaseHook's client plus a find by tag."""

from __future__ import annotations

from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook


class FSxHook(AwsBaseHook):
    def __init__(self, *args, **kwargs):
        kwargs["client_type"] = "fsx"
        super().__init__(*args, **kwargs)

    def find_file_system(self, tag_key: str, tag_value: str) -> dict | None:
        """The newest live file system carrying the tag (how a retried task finds the one it made)."""
        matches = [
            fs
            for page in self.conn.get_paginator("describe_file_systems").paginate()
            for fs in page["FileSystems"]
            if {"Key": tag_key, "Value": tag_value} in fs.get("Tags", [])
            and fs.get("Lifecycle") not in ("DELETING", "FAILED")
        ]
        return max(matches, key=lambda fs: fs.get("CreationTime", 0), default=None)
