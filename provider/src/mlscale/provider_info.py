"""Provider metadata for Airflow's ProvidersManager (the `apache_airflow_provider` entry point).

Never kept by hand: the module and link lists below are written from the code by `make provider-info`
(provider/scripts/generate_provider_info.py), and tests/test_provider_info.py fails when they no longer match
it. They are data because every Airflow process loads provider info: finding them there would cost each
process its import of the whole provider. The config section is `mlscale.settings.OPTIONS`.
"""

from __future__ import annotations

from mlscale import __version__
from mlscale.settings import config_schema

# --- generated: start ---
# fmt: off
MODULES = {
    "operators": [
        "mlscale.operators.approval",
        "mlscale.operators.batch",
        "mlscale.operators.compilation",
        "mlscale.operators.diagnosis",
        "mlscale.operators.edge",
        "mlscale.operators.endpoint",
        "mlscale.operators.etl",
        "mlscale.operators.evaluation",
        "mlscale.operators.fsx",
        "mlscale.operators.processing",
        "mlscale.operators.quality",
        "mlscale.operators.sagemaker_job",
        "mlscale.operators.spark",
        "mlscale.operators.stage",
        "mlscale.operators.training"
    ],
    "sensors": [
        "mlscale.sensors"
    ],
    "triggers": [
        "mlscale.triggers.stage"
    ],
    "hooks": [
        "mlscale.hooks.fsx",
        "mlscale.hooks.greengrass"
    ]
}
EXTRA_LINKS = [
    "mlscale.links.TrainingJobLink",
    "mlscale.links.ProcessingJobLink",
    "mlscale.links.TransformJobLink",
    "mlscale.links.CompilationJobLink",
    "mlscale.links.EndpointLink",
    "mlscale.links.FileSystemLink",
    "mlscale.links.GreengrassDeploymentLink"
]
# fmt: on
# --- generated: end ---


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
        **{kind: [{"integration-name": "mlscale", "python-modules": modules}] for kind, modules in MODULES.items()},
        "config": config_schema(),
        "extra-links": EXTRA_LINKS,
    }
