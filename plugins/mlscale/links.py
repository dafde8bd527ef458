"""Extra links from mlscale's operators to the AWS console."""

from __future__ import annotations

from airflow.providers.amazon.aws.links.base_aws import BASE_AWS_CONSOLE_LINK, BaseAwsLink


class TrainingJobLink(BaseAwsLink):
    """The training job in the SageMaker console."""

    name = "SageMaker training job"
    key = "mlscale_training_job"
    format_str = BASE_AWS_CONSOLE_LINK + "/sagemaker/home?region={region_name}#/jobs/{job_name}"
