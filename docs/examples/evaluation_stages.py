"""The evaluation stages, as the documentation shows them: Batch Transform evaluation with the quality gate,
the bottleneck diagnosis, and a person's approval.

tests/docs/test_examples.py imports this DAG and validates every stage's spec.
"""

from __future__ import annotations

from pathlib import Path

import pendulum
from airflow.sdk import DAG

# [START imports]
from mlscale.operators import (
    ModelApprovalOperator,
    SageMakerBatchEvaluationOperator,
    SageMakerScriptTrainingOperator,
    TrainingDiagnosisOperator,
)
from mlscale.specs import DiagnosisSpec, EvaluationSpec, TrainingSpec

# [END imports]

INCLUDE = Path(__file__).resolve().parents[2] / "include"
ROLE_ARN = "arn:aws:iam::111122223333:role/mlscale-sagemaker"
IMAGES = "763104351884.dkr.ecr.us-east-1.amazonaws.com"
INFERENCE_IMAGE = f"{IMAGES}/pytorch-inference:2.5.1-cpu-py311-ubuntu22.04-sagemaker"

with DAG(dag_id="docs_evaluation_stages", start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), schedule=None):
    train = SageMakerScriptTrainingOperator(
        task_id="train",
        spec=TrainingSpec(
            entry_point="train.py",
            source_dir=str(INCLUDE / "training"),
            role_arn=ROLE_ARN,
            output_path="s3://my-bucket/models",
            image_uri=f"{IMAGES}/pytorch-training:2.5.1-cpu-py311-ubuntu22.04-sagemaker",
            inputs={"train": "s3://my-bucket/data/train/"},
        ),
    )

    # [START evaluation]
    evaluate = SageMakerBatchEvaluationOperator(
        task_id="evaluate",
        spec=EvaluationSpec(
            model_artifact=train.output["model_artifact"],
            role_arn=ROLE_ARN,
            image_uri=INFERENCE_IMAGE,
            features_uri="s3://my-bucket/eval/features/",  # one record per line
            labels_uri="s3://my-bucket/eval/labels/",  # same files, same line order
            output_uri="s3://my-bucket/evaluation/run-1/",
            model_package_group="my-models",
            metric="accuracy",
            min_value=0.95,
            champion_tolerance=0.01,
        ),
    )
    diagnose = TrainingDiagnosisOperator(task_id="diagnose", spec=DiagnosisSpec(job_name=train.output["job_name"]))
    # [END evaluation]

    # [START approval]
    # asks a person (Airflow's Required Actions page) only when the package is PendingManualApproval
    approve = ModelApprovalOperator(
        task_id="approve",
        model_package_arn=evaluate.output["model_package_arn"],
        evaluation=evaluate.output,
    )
    # [END approval]
