"""Greengrass v2: the provider has no hook for it; this is AwsBaseHook's greengrassv2 client."""

from __future__ import annotations

from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook


class GreengrassHook(AwsBaseHook):
    def __init__(self, *args, **kwargs):
        kwargs["client_type"] = "greengrassv2"
        super().__init__(*args, **kwargs)
