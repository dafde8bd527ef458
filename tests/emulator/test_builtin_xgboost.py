"""The built-in XGBoost algorithm: a training job with the image and hyperparameters only, as the SageMaker
examples run it (CSV with the label first, or libsvm), its metrics, its model served by the same image."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from tests.conftest import ROLE_ARN, job_logs, wait_for_job

pytestmark = pytest.mark.emulator
XGBOOST_IMAGE = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-xgboost:1.7-1"


def put_csv(s3, key: str, rows: np.ndarray) -> str:
    text = io.StringIO()
    np.savetxt(text, rows, delimiter=",", fmt="%g")
    s3.put_object(Bucket="mlscale-test", Key=key, Body=text.getvalue().encode())
    return f"s3://mlscale-test/{key.rsplit('/', 1)[0]}/"


def put_libsvm(s3, key: str, features: np.ndarray, labels: np.ndarray) -> str:
    lines = [
        " ".join([f"{label:g}", *(f"{i}:{v:g}" for i, v in enumerate(row) if v)])
        for row, label in zip(features, labels)
    ]
    s3.put_object(Bucket="mlscale-test", Key=key, Body="\n".join(lines).encode())
    return f"s3://mlscale-test/{key.rsplit('/', 1)[0]}/"


def algorithm_request(
    name: str, hyperparameters: dict, channels: dict, content_type: str | None, instance_count: int = 1
) -> dict:
    """What `sagemaker.estimator.Estimator(image_uri=<xgboost>, ...).fit({...})` sends: plain-string values."""
    return {
        "TrainingJobName": name,
        "RoleArn": ROLE_ARN,
        "AlgorithmSpecification": {"TrainingImage": XGBOOST_IMAGE, "TrainingInputMode": "File"},
        "HyperParameters": {k: str(v) for k, v in hyperparameters.items()},
        "InputDataConfig": [
            {
                "ChannelName": channel,
                **({"ContentType": content_type} if content_type else {}),
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": uri,
                        "S3DataDistributionType": "ShardedByS3Key" if channel == "train" else "FullyReplicated",
                    }
                },
            }
            for channel, uri in channels.items()
        ],
        "OutputDataConfig": {"S3OutputPath": "s3://mlscale-test/builtin-models"},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": instance_count, "VolumeSizeInGB": 5},
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
    }


@pytest.fixture(scope="module")
def cancer(clients):
    """Breast cancer data (binary), CSV with the label first, split in train and validation."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    rows = np.column_stack([data.target, data.data])
    rng = np.random.default_rng(0)
    rng.shuffle(rows)
    s3 = clients["s3"]
    return {
        "train": put_csv(s3, "builtin/cancer/train/part-0.csv", rows[:400])
        and put_csv(s3, "builtin/cancer/train/part-1.csv", rows[400:450]),
        "validation": put_csv(s3, "builtin/cancer/validation/data.csv", rows[450:]),
        "holdout": rows[450:],
    }


def test_csv_training_reports_the_algorithms_metrics_and_its_model_serves(emulator, clients, cancer):
    import boto3

    sm = clients["sagemaker"]
    sm.create_training_job(
        **algorithm_request(
            "xgb-algo-csv",
            {"objective": "binary:logistic", "num_round": 30, "max_depth": 3, "eta": 0.3, "eval_metric": "auc"},
            {"train": cancer["train"], "validation": cancer["validation"]},
            "text/csv",
        )
    )
    job = wait_for_job(sm, "xgb-algo-csv")
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    defined = {d["Name"] for d in job["AlgorithmSpecification"]["MetricDefinitions"]}
    assert {"train:auc", "validation:auc", "validation:rmse"} <= defined  # SageMaker's, for every XGBoost job
    metrics = {m["MetricName"]: m["Value"] for m in job["FinalMetricDataList"]}
    assert metrics["validation:auc"] > 0.95 and set(metrics) == {"train:auc", "validation:auc"}
    lines = [line for stream in job_logs(clients["logs"], "xgb-algo-csv").values() for line in stream]
    assert any(line.startswith("[29]#011train-auc:") for line in lines)  # the round as CloudWatch shows it

    sm.create_model(
        ModelName="xgb-algo-csv",
        ExecutionRoleArn=ROLE_ARN,
        PrimaryContainer={"Image": XGBOOST_IMAGE, "ModelDataUrl": job["ModelArtifacts"]["S3ModelArtifacts"]},
    )
    sm.create_endpoint_config(
        EndpointConfigName="xgb-algo-csv",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": "xgb-algo-csv",
                "InitialInstanceCount": 1,
                "InstanceType": "ml.m5.large",
            }
        ],
    )
    sm.create_endpoint(EndpointName="xgb-algo-csv", EndpointConfigName="xgb-algo-csv")
    sm.get_waiter("endpoint_in_service").wait(
        EndpointName="xgb-algo-csv", WaiterConfig={"Delay": 1, "MaxAttempts": 120}
    )
    try:
        runtime = boto3.client("sagemaker-runtime", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
        holdout = cancer["holdout"]
        text = io.StringIO()
        np.savetxt(text, holdout[:, 1:], delimiter=",", fmt="%g")
        answer = runtime.invoke_endpoint(
            EndpointName="xgb-algo-csv", ContentType="text/csv", Accept="text/csv", Body=text.getvalue()
        )
        scores = np.array([float(v) for v in answer["Body"].read().decode().replace("\n", ",").split(",") if v])
        assert len(scores) == len(holdout) and ((scores > 0.5) == holdout[:, 0]).mean() > 0.9
        anything = runtime.invoke_endpoint(EndpointName="xgb-algo-csv", ContentType="text/csv", Body=text.getvalue())
        assert anything["ContentType"] == "text/csv"  # the container's answer when the caller accepts any
    finally:
        sm.delete_endpoint(EndpointName="xgb-algo-csv")


def test_libsvm_is_the_default_content_type_and_two_instances_train_one_model(clients):
    from sklearn.datasets import load_iris

    iris = load_iris()
    order = np.random.default_rng(1).permutation(len(iris.target))
    features, labels = iris.data[order], iris.target[order]
    s3 = clients["s3"]
    train = put_libsvm(s3, "builtin/iris/train/a.libsvm", features[:60], labels[:60])
    put_libsvm(s3, "builtin/iris/train/b.libsvm", features[60:120], labels[60:120])
    validation = put_libsvm(s3, "builtin/iris/validation/v.libsvm", features[120:], labels[120:])
    sm = clients["sagemaker"]
    sm.create_training_job(
        **algorithm_request(
            "xgb-algo-libsvm",
            {"objective": "multi:softmax", "num_class": 3, "num_round": 20, "max_depth": 2},
            {"train": train, "validation": validation},
            None,
            instance_count=2,
        )
    )
    job = wait_for_job(sm, "xgb-algo-libsvm")
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    metrics = {m["MetricName"]: m["Value"] for m in job["FinalMetricDataList"]}
    assert metrics["validation:mlogloss"] < 0.5  # multi:softmax's default metric
    logs = job_logs(clients["logs"], "xgb-algo-libsvm")
    assert len(logs) == 2 and all(any("Train matrix has 60 rows" in line for line in lines) for lines in logs.values())


def test_checkpoints_a_round_at_a_time_and_a_job_resumes_from_them(clients, cancer):
    """CheckpointConfig: the last five rounds are kept in S3; a job given them trains only the rounds left."""
    sm, checkpoints = clients["sagemaker"], "s3://mlscale-test/builtin/checkpoints/cancer/"
    for name, rounds in (("xgb-algo-ckpt-1", 8), ("xgb-algo-ckpt-2", 12)):
        request = algorithm_request(
            name, {"objective": "binary:logistic", "num_round": rounds}, {"train": cancer["train"]}, "text/csv"
        )
        request["CheckpointConfig"] = {"S3Uri": checkpoints}
        sm.create_training_job(**request)
        job = wait_for_job(sm, name)
        assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    saved = clients["s3"].list_objects_v2(Bucket="mlscale-test", Prefix="builtin/checkpoints/cancer/")["Contents"]
    assert sorted(int(o["Key"].rsplit(".", 1)[1]) for o in saved)[-5:] == [7, 8, 9, 10, 11]
    lines = [line for stream in job_logs(clients["logs"], "xgb-algo-ckpt-2").values() for line in stream]
    rounds = [int(line[1 : line.index("]")]) for line in lines if line.startswith("[") and "#011" in line]
    assert rounds == [8, 9, 10, 11] and any("resuming from iteration 8" in line for line in lines)


@pytest.mark.parametrize(
    ("hyperparameters", "reason"),
    [
        ({"objective": "binary:logistic"}, "ClientError: Missing required hyperparameter: num_round"),
        ({"num_round": 5, "silent": 1}, "ClientError: Extraneous hyperparameter found: silent"),
        ({"num_round": 5, "eta": 3}, "ClientError: Hyperparameter eta: 3.0 is not in [0, 1]"),
        ({"num_round": 5, "objective": "multi:softprob"}, "ClientError: Require input for parameter num_class"),
    ],
)
def test_hyperparameters_are_refused_in_the_algorithms_words(clients, cancer, hyperparameters, reason):
    name = f"xgb-algo-bad-{abs(hash(json.dumps(hyperparameters, sort_keys=True))) % 10**6}"
    clients["sagemaker"].create_training_job(
        **algorithm_request(name, hyperparameters, {"train": cancer["train"]}, "text/csv")
    )
    job = wait_for_job(clients["sagemaker"], name)
    assert job["TrainingJobStatus"] == "Failed" and job["FailureReason"].startswith(reason), job["FailureReason"]


def test_a_built_in_image_the_emulator_does_not_run_is_refused_before_any_work(clients):
    request = algorithm_request(
        "kmeans-refused", {"k": 3, "feature_dim": 4}, {"train": "s3://mlscale-test/x/"}, "text/csv"
    )
    request["AlgorithmSpecification"]["TrainingImage"] = "382416733822.dkr.ecr.us-east-1.amazonaws.com/kmeans:1"
    with pytest.raises(clients["sagemaker"].exceptions.ClientError) as refused:
        clients["sagemaker"].create_training_job(**request)
    message = refused.value.response["Error"]["Message"]
    assert "kmeans:1" in message and "built-in XGBoost" in message
    names = [j["TrainingJobName"] for j in clients["sagemaker"].list_training_jobs()["TrainingJobSummaries"]]
    assert "kmeans-refused" not in names
