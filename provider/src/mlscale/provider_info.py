"""Provider metadata for Airflow's ProvidersManager (the `apache_airflow_provider` entry point)."""

from mlscale import __version__
from mlscale.settings import config_schema


def get_provider_info() -> dict:
    return {
        "package-name": "mlscale",
        "name": "mlscale",
        "description": "End-to-end ML pipelines on AWS (SageMaker, FSx, Neo, Greengrass) with a local emulator.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "mlscale",
                "external-doc-url": "https://docs.aws.amazon.com/sagemaker/",
                "tags": ["aws"],
            }
        ],
        "operators": [
            {
                "integration-name": "mlscale",
                "python-modules": [
                    "mlscale.operators.training",
                    "mlscale.operators.processing",
                    "mlscale.operators.quality",
                    "mlscale.operators.fsx",
                    "mlscale.operators.diagnosis",
                    "mlscale.operators.evaluation",
                    "mlscale.operators.compilation",
                    "mlscale.operators.endpoint",
                    "mlscale.operators.edge",
                ],
            },
        ],
        "triggers": [
            {"integration-name": "mlscale", "python-modules": ["mlscale.triggers.stage"]},
        ],
        "sensors": [
            {"integration-name": "mlscale", "python-modules": ["mlscale.sensors"]},
        ],
        "hooks": [
            {"integration-name": "mlscale", "python-modules": ["mlscale.hooks.fsx", "mlscale.hooks.greengrass"]},
        ],
        "config": config_schema(),
        "extra-links": [
            f"mlscale.links.{name}"
            for name in (
                "TrainingJobLink",
                "ProcessingJobLink",
                "TransformJobLink",
                "CompilationJobLink",
                "EndpointLink",
                "FileSystemLink",
                "GreengrassDeploymentLink",
            )
        ],
    }
