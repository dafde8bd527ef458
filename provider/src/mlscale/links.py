"""Extra links from mlscale's operators: the AWS console, or the emulator's own pages when the connection
points at the emulator (an `endpoint_url` that is not an AWS or VPC endpoint)."""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import quote, urlparse

from airflow.providers.amazon.aws.links.base_aws import BASE_AWS_CONSOLE_LINK, BaseAwsLink

EMULATOR_PAGES = "/moto-api/mlscale"
AWS_HOST_SUFFIXES = (".amazonaws.com", ".amazonaws.com.cn", ".api.aws")
SAGEMAKER_CONSOLE = BASE_AWS_CONSOLE_LINK + "/sagemaker/home?region={region_name}#"


def emulator_url(endpoint_url: str | None) -> str | None:
    """The emulator's base URL when the connection's endpoint_url points at it, else None."""
    if not endpoint_url:
        return None
    host = urlparse(endpoint_url).hostname or ""
    return None if host.endswith(AWS_HOST_SUFFIXES) else endpoint_url.rstrip("/")


class ConsoleLink(BaseAwsLink):
    """One resource: `format_str` in the AWS console, `emulator_page` on the emulator."""

    emulator_page: ClassVar[str]  # "training-jobs/{job_name}"

    def format_link(self, **kwargs: Any) -> str:
        base = kwargs.get("emulator_url")
        if not base:
            return super().format_link(**kwargs)
        try:
            page = self.emulator_page.format(**{k: quote(str(v), safe="") for k, v in kwargs.items()})
        except KeyError:
            return ""
        return f"{base}{EMULATOR_PAGES}/{page}"

    @classmethod
    def persist_for(cls, context, operator, **resource: str) -> None:
        """Store the link's fields from the operator's AWS hook (region, partition, emulator) and the resource."""
        hook = operator.hook
        cls.persist(
            context=context,
            operator=operator,
            region_name=hook.conn_region_name,
            aws_partition=hook.conn_partition,
            emulator_url=emulator_url(hook.conn_config.endpoint_url),
            **resource,
        )


class TrainingJobLink(ConsoleLink):
    name = "SageMaker training job"
    key = "mlscale_training_job"
    format_str = SAGEMAKER_CONSOLE + "/jobs/{job_name}"
    emulator_page = "training-jobs/{job_name}"


class ProcessingJobLink(ConsoleLink):
    name = "SageMaker processing job"
    key = "mlscale_processing_job"
    format_str = SAGEMAKER_CONSOLE + "/processing-jobs/{job_name}"
    emulator_page = "processing-jobs/{job_name}"


class TransformJobLink(ConsoleLink):
    name = "SageMaker batch transform job"
    key = "mlscale_transform_job"
    format_str = SAGEMAKER_CONSOLE + "/transform-jobs/{job_name}"
    emulator_page = "transform-jobs/{job_name}"


class CompilationJobLink(ConsoleLink):
    name = "SageMaker Neo compilation job"
    key = "mlscale_compilation_job"
    format_str = SAGEMAKER_CONSOLE + "/compilation-jobs/{job_name}"
    emulator_page = "compilation-jobs/{job_name}"


class EndpointLink(ConsoleLink):
    name = "SageMaker endpoint"
    key = "mlscale_endpoint"
    format_str = SAGEMAKER_CONSOLE + "/endpoints/{endpoint_name}"
    emulator_page = "endpoints/{endpoint_name}"


class FileSystemLink(ConsoleLink):
    name = "FSx for Lustre file system"
    key = "mlscale_fsx_file_system"
    format_str = BASE_AWS_CONSOLE_LINK + "/fsx/home?region={region_name}#file-system-details/{file_system_id}"
    emulator_page = "file-systems/{file_system_id}"


class GreengrassDeploymentLink(ConsoleLink):
    name = "Greengrass deployment"
    key = "mlscale_greengrass_deployment"
    format_str = BASE_AWS_CONSOLE_LINK + "/iot/home?region={region_name}#/greengrass/v2/deployments/{deployment_id}"
    emulator_page = "greengrass-deployments/{deployment_id}"


ALL_LINKS = (
    TrainingJobLink,
    ProcessingJobLink,
    TransformJobLink,
    CompilationJobLink,
    EndpointLink,
    FileSystemLink,
    GreengrassDeploymentLink,
)
