"""The data stages, as the documentation shows them: ETL on Athena, data quality, shards, FSx for Lustre, and
ETL with shards in one Glue Spark job.

tests/docs/test_examples.py imports this DAG and validates every stage's spec.
"""

from __future__ import annotations

from pathlib import Path

import pendulum
from airflow.sdk import DAG

# [START imports]
from mlscale.operators import (
    AthenaEtlOperator,
    DataQualityOperator,
    FSxLustreStageOperator,
    GlueSparkJobOperator,
    SageMakerProcessingScriptOperator,
)
from mlscale.specs import (
    AthenaEtlSpec,
    FSxLustreSpec,
    GlueSparkSpec,
    ProcessingInput,
    ProcessingOutput,
    ProcessingSpec,
    QualitySpec,
)

# [END imports]

INCLUDE = Path(__file__).resolve().parents[2] / "include"
ROLE_ARN = "arn:aws:iam::111122223333:role/mlscale-sagemaker"
PROCESSING_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-cpu-py311-ubuntu22.04-sagemaker"

with DAG(dag_id="docs_data_stages", start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), schedule=None):
    # [START etl]
    etl = AthenaEtlOperator(
        task_id="etl",
        spec=AthenaEtlSpec(
            # or a .sql file under the DAG's template_searchpath, rendered as a template
            query=(
                "UNLOAD (SELECT record_id, label, pixels FROM mlscale.raw_digits"
                " WHERE dt >= '2026-10-04' AND dt < '2026-10-11')"
                " TO 's3://my-bucket/etl/run-1/' WITH (format = 'PARQUET')"
            ),
            database="mlscale",
            data_prefix="s3://my-bucket/etl/run-1/",  # emptied before each query, then written
            output_location="s3://my-bucket/athena-results/",
            inputs={"raw": "s3://my-bucket/raw/digits/"},  # what the query reads: the cache hashes it
        ),
    )
    # [END etl]

    # [START quality]
    quality = DataQualityOperator(
        task_id="quality",
        spec=QualitySpec(
            database="mlscale",
            table="raw_digits",
            partition_start="2026-10-04",
            partition_end="2026-10-11",
            data_prefix="s3://my-bucket/etl/run-1/",
            report_prefix="s3://my-bucket/quality",
            output_location="s3://my-bucket/athena-results/",
            thresholds={"min_rows": 1000, "max_drift_psi": 0.2},
        ),
    )
    # [END quality]

    # [START shard]
    shard = SageMakerProcessingScriptOperator(
        task_id="shard",
        spec=ProcessingSpec(
            script=str(INCLUDE / "processing" / "shard.py"),  # uploaded under its content hash
            role_arn=ROLE_ARN,
            image_uri=PROCESSING_IMAGE,
            code_location="s3://my-bucket/code/processing",
            arguments=["--shards", "64", "--seed", "20261123", "--test-fraction", "0.1"],
            inputs={"data": ProcessingInput("s3://my-bucket/etl/run-1/", "/opt/ml/processing/input/data")},
            outputs={"shards": ProcessingOutput("/opt/ml/processing/output/shards", "s3://my-bucket/shards/train/")},
        ),
    )
    # [END shard]

    # [START fsx]
    stage = FSxLustreStageOperator(
        task_id="stage_fsx",
        spec=FSxLustreSpec(
            data_repository_path="s3://my-bucket/shards/train/",
            subnet_id="subnet-0123456789abcdef0",
            security_group_ids=["sg-0123456789abcdef0"],
            deployment_type="SCRATCH_2",
            storage_capacity_gib=1200,
            file_system_path="/shards",
        ),
    )
    # [END fsx]

    # [START spark]
    spark_etl = GlueSparkJobOperator(
        task_id="spark_etl",
        spec=GlueSparkSpec(
            job_name="mlscale-etl-shard",  # created, or updated when the script or settings change
            script=str(INCLUDE / "spark" / "etl_shard.py"),  # a plain PySpark script, uploaded by content hash
            extra_py_files=[str(INCLUDE / "processing" / "shard.py")],  # what it imports (Glue's --extra-py-files)
            role_arn="arn:aws:iam::111122223333:role/mlscale-glue",
            code_location="s3://my-bucket/code/spark",
            arguments={
                "--input": "s3://my-bucket/raw/digits/dt=2026-10-04/,s3://my-bucket/raw/digits/dt=2026-10-05/",
                "--etl-output": "s3://my-bucket/etl/run-2/",
                "--shards-output": "s3://my-bucket/shards/run-2/train/",
                "--test-output": "s3://my-bucket/shards/run-2/test/",
                "--eval-output": "s3://my-bucket/eval/run-2/",
                "--shards": "64",
                "--seed": "20261123",
                "--test-fraction": "0.1",
            },
            inputs={"raw": "s3://my-bucket/raw/digits/"},  # fingerprinted: the cache reruns when they change
            outputs={"shards": "s3://my-bucket/shards/run-2/train/", "etl": "s3://my-bucket/etl/run-2/"},
            worker_type="G.2X",
            number_of_workers=10,  # one driver, nine executors
            spark_conf={"spark.sql.shuffle.partitions": "400"},
        ),
    )
    # [END spark]

    etl >> quality >> shard >> stage
    spark_etl >> stage
