"""The example pipeline's trigger form: each param with its JSON schema, so the form checks what it can.

What the form cannot check (a Neo target against botocore's list, the quality keys) `plan_run` checks:
mlscale_example.pipeline.params.check_run_params.
"""

from __future__ import annotations

from airflow.sdk import Param

from mlscale.params import form_param
from mlscale.specs.cache import CacheConfig


def stage_cache() -> CacheConfig:
    """The pipeline's job stages' CacheConfig: on when the run's `cache` param is (a new object per task: each
    task renders its own)."""
    from mlscale_example.settings import setting

    return CacheConfig(enabled="{{ params.cache }}", expire_after="P30D", location=cache_location(setting("bucket")))


def cache_location(bucket: str) -> str:
    """Where the example's stages keep their cache entries: beside the run's data, in the project's bucket."""
    return f"s3://{bucket}/mlscale/cache"


def default_poll_interval() -> int:
    """`[mlscale_example] poll_interval`, a whole number of seconds."""
    from mlscale_example.settings import setting

    return int(setting("poll_interval"))  # checked when read (mlscale_example.settings.RULES)


def pipeline_form(database: str) -> dict[str, Param]:
    """The params of dags/mlscale_pipeline.py; `database` is the Glue database's default. Made with form_param:
    Airflow copies and checks them for each of the DAG's tasks at every parse (mlscale.params)."""
    return {
        "database": form_param(
            database,
            type="string",
            pattern=r"^[a-z_][a-z0-9_]{0,254}$(?!\n)",
            description="Glue database of the raw table (an Athena identifier)",
        ),
        "etl_engine": form_param(
            "athena",
            enum=["athena", "spark"],
            description="athena: one Athena query (ETL), then one Processing job shards. spark: one AWS Glue "
            "Spark job does both, for transforms SQL does not express or data larger than one instance's memory",
        ),
        "instance_type": form_param(
            "ml.c5.xlarge",
            type="string",
            pattern=r"^ml\.[a-z0-9]+\.[a-z0-9]+$(?!\n)",
            description="SageMaker training instance type",
        ),
        "instance_count": form_param(
            2,
            type="integer",
            minimum=1,
            maximum=16,
            description="Training instances (Batch: nodes); more than one trains with DDP",
        ),
        "training_backend": form_param(
            "sagemaker",
            enum=["sagemaker", "batch"],
            description="Train on SageMaker, or on EC2 as one AWS Batch multi-node job on a "
            "CloudFormation cluster the run creates and deletes",
        ),
        "gpus_per_instance": form_param(
            1, type="integer", minimum=1, maximum=16, description="For the storage advisor (a CPU instance counts as 1)"
        ),
        "samples_per_second": form_param(
            5000, type="integer", minimum=1, description="Expected training throughput per GPU, for the storage advisor"
        ),
        "epochs": form_param(4, type="integer", minimum=1, maximum=200),
        "quality": form_param(
            {
                "min_rows": 1000,
                "max_missing_fraction": 0.01,
                "max_duplicate_fraction": 0.01,
                "min_label_share": 0.05,
                "max_drift_psi": 0.2,
            },
            type="object",
            description="Data-quality thresholds; a failed check stops the run",
        ),
        "min_accuracy": form_param(
            0.9,
            type="number",
            minimum=0,
            maximum=1,
            description="Quality gate: held-out accuracy a model needs to be approved",
        ),
        "gate_mode": form_param(
            "auto",
            enum=["auto", "manual"],
            description="auto: the gate's checks decide. manual: a model that passes them waits "
            "(PendingManualApproval) for a person to approve it in the Airflow UI",
        ),
        "approval_minutes": form_param(
            24 * 60,
            type="integer",
            minimum=1,
            maximum=7 * 24 * 60,
            description="gate_mode=manual: how long to wait for an answer; then the model "
            "stays pending and nothing is deployed",
        ),
        "champion_tolerance": form_param(
            0.01,
            type="number",
            minimum=0,
            maximum=1,
            description="Quality gate: how much worse than the approved champion is tolerated",
        ),
        "target_device": form_param(
            "ml_c5", type="string", description="Neo target (a botocore TargetDevice: ml_c5, ml_g4dn, jetson_nano, ...)"
        ),
        "deploy_target": form_param(
            "both",
            enum=["endpoint", "edge", "both", "none"],
            description="Where an approved model goes: a real-time endpoint, the edge fleet, "
            "both, or none (register only). Backfill runs never deploy",
        ),
        "bake_seconds": form_param(
            300,
            type="integer",
            minimum=0,
            maximum=3600,
            description="Endpoint updates (blue/green): how long the new fleet takes all traffic, "
            "watched by rollback alarms, before the old fleet goes",
        ),
        "storage": form_param(
            "auto",
            enum=["auto", "s3", "fsx_lustre"],
            description="Where training reads from: the storage advisor's choice, or forced",
        ),
        "metrics_period": form_param(
            60,
            type="integer",
            enum=[1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600],
            description="CloudWatch period (s) of the utilisation the diagnosis reads",
        ),
        "cache": form_param(
            False,
            type="boolean",
            description="Reuse the latest successful job of each stage whose fingerprint (request, code, "
            "input data) matches: ETL, shard, train, evaluate, compile; never the deploys. "
            "An unchanged re-run launches no job",
        ),
        "poll_interval": form_param(
            default_poll_interval(),
            type="integer",
            minimum=1,
            maximum=300,
            description="Seconds between status checks of long-running jobs",
        ),
    }
