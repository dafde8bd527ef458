"""SageMaker Python SDK v2 code as a data scientist writes it, run against the emulator with only
AWS_ENDPOINT_URL set: scikit-learn, PyTorch and XGBoost estimators fit, transform, deploy, predict, delete;
the built-in XGBoost algorithm through the generic Estimator; and a `sagemaker.workflow.airflow` training
config for the provider's operator.

Run by tests/sdk/test_sdk_v2.py in the SDK's own virtual environment; prints one JSON line of results.
The waits use the SDK's own functions with a 1 s poll (its defaults poll every 10-30 s).
"""

import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import sagemaker
from sagemaker import image_uris
from sagemaker.deserializers import CSVDeserializer
from sagemaker.estimator import Estimator
from sagemaker.inputs import TrainingInput
from sagemaker.pytorch import PyTorch
from sagemaker.serializers import CSVSerializer
from sagemaker.sklearn import SKLearn
from sagemaker.xgboost import XGBoost

ROLE = os.environ["SDK_TEST_ROLE"]
WORK = tempfile.mkdtemp()
SKLEARN_SCRIPT = (Path(__file__).parent / "code" / "sklearn_entry.py").read_text()  # shared with the v3 client
PYTORCH_SCRIPT = """
import argparse, os
import numpy as np
import torch

def model_fn(model_dir):
    model = torch.nn.Linear(2, 1)
    model.load_state_dict(torch.load(os.path.join(model_dir, "model.pth")))
    return model.eval()

def predict_fn(data, model):
    with torch.no_grad():
        return torch.sigmoid(model(torch.as_tensor(data, dtype=torch.float32))).squeeze(1)

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=200)
    args = parser.parse_args()
    train = os.environ["SM_CHANNEL_TRAIN"]
    rows = np.vstack([np.loadtxt(os.path.join(train, f), delimiter=",", ndmin=2) for f in sorted(os.listdir(train))])
    x, y = torch.tensor(rows[:, 1:], dtype=torch.float32), torch.tensor(rows[:, :1], dtype=torch.float32)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for epoch in range(args.epochs):
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"loss={loss.item():.4f}")
    torch.save(model.state_dict(), os.path.join(os.environ["SM_MODEL_DIR"], "model.pth"))
"""
XGBOOST_SCRIPT = """
import argparse, os
import numpy as np
import xgboost as xgb

def model_fn(model_dir):
    booster = xgb.Booster()
    booster.load_model(os.path.join(model_dir, "model.json"))
    return booster

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_round", type=int, default=10)
    args = parser.parse_args()
    train = os.environ["SM_CHANNEL_TRAIN"]
    rows = np.vstack([np.loadtxt(os.path.join(train, f), delimiter=",", ndmin=2) for f in sorted(os.listdir(train))])
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 2}, xgb.DMatrix(rows[:, 1:], label=rows[:, 0]),
                        num_boost_round=args.num_round)
    booster.save_model(os.path.join(os.environ["SM_MODEL_DIR"], "model.json"))
"""


def write(name, text):
    folder = os.path.join(WORK, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "entry.py"), "w") as handle:
        handle.write(text)
    return folder


def fitted(estimator, session, inputs):
    estimator.fit(inputs, wait=False)
    name = estimator.latest_training_job.name
    session.logs_for_job(name, wait=True, poll=1)  # the SDK's own log tail, as fit(logs=True) prints it
    return session.describe_training_job(name)


def deployed_predictions(estimator, session, features, **deploy):
    predictor = estimator.deploy(initial_instance_count=1, instance_type="ml.m5.large", wait=False, **deploy)
    session.wait_for_endpoint(predictor.endpoint_name, poll=1)
    try:
        return np.ravel(np.array(predictor.predict(features), dtype=float)).tolist()  # CSV answers are text
    finally:
        predictor.delete_endpoint()


def main():
    # The SDK names its default bucket from STS at sts.<region>.amazonaws.com, an endpoint it sets itself
    # (AWS_ENDPOINT_URL cannot reach it): a bucket named here is created by the SDK through the emulator.
    session = sagemaker.Session(default_bucket=os.environ["SDK_TEST_BUCKET"])
    bucket = session.default_bucket()
    rng = np.random.default_rng(0)
    features = rng.normal(size=(200, 2))
    labels = (features[:, 0] + features[:, 1] > 0).astype(float)
    train_file = os.path.join(WORK, "train.csv")
    np.savetxt(train_file, np.column_stack([labels, features]), delimiter=",", fmt="%g")
    inputs = {"train": session.upload_data(train_file, bucket=bucket, key_prefix="sdk-v2/train")}
    probe, truth = features[:20], labels[:20]
    results = {"bucket": bucket}
    probe_file = os.path.join(WORK, "probe.csv")
    np.savetxt(probe_file, probe, delimiter=",", fmt="%g")
    probe_uri = session.upload_data(probe_file, bucket=bucket, key_prefix="sdk-v2/probe")

    def transformed(estimator, name):
        """Batch Transform of the probe rows (CSV in, CSV out), the predictions as numbers."""
        transformer = estimator.transformer(
            instance_count=1,
            instance_type="ml.m5.large",
            accept="text/csv",
            output_path=f"s3://{bucket}/sdk-v2/transform-{name}",
        )
        transformer.transform(probe_uri, content_type="text/csv", split_type="Line", wait=False)
        session.wait_for_transform_job(transformer.latest_transform_job.name, poll=1)
        out = session.read_s3_file(bucket, f"sdk-v2/transform-{name}/probe.csv.out")
        return np.array(
            [float(v) for v in out.replace("\n", ",").replace("[", "").replace("]", "").split(",") if v.strip()]
        )

    def scikit_learn():
        sklearn = SKLearn(
            entry_point="entry.py",
            source_dir=write("sklearn", SKLEARN_SCRIPT),
            role=ROLE,
            framework_version="1.2-1",
            py_version="py3",
            instance_type="ml.m5.large",
            hyperparameters={"C": 10.0},
            sagemaker_session=session,
            base_job_name="sdk-v2-sklearn",
        )
        results["sklearn_status"] = fitted(sklearn, session, inputs)["TrainingJobStatus"]
        predicted = deployed_predictions(sklearn, session, probe)
        results["sklearn_endpoint_accuracy"] = float(np.mean(np.array(predicted) == truth))
        results["sklearn_transform_accuracy"] = float(np.mean(transformed(sklearn, "sklearn") == truth))

    def pytorch():
        estimator = PyTorch(
            entry_point="entry.py",
            source_dir=write("pytorch", PYTORCH_SCRIPT),
            role=ROLE,
            framework_version="2.5",
            py_version="py311",
            instance_count=1,
            instance_type="ml.m5.large",
            hyperparameters={"epochs": 200},
            sagemaker_session=session,
            base_job_name="sdk-v2-pytorch",
        )
        results["pytorch_status"] = fitted(estimator, session, inputs)["TrainingJobStatus"]
        scores = deployed_predictions(estimator, session, probe.astype("float32"))
        results["pytorch_endpoint_accuracy"] = float(np.mean((np.array(scores) > 0.5) == truth))
        results["pytorch_transform_accuracy"] = float(np.mean((transformed(estimator, "pytorch") > 0.5) == truth))

    def xgboost():
        estimator = XGBoost(
            entry_point="entry.py",
            source_dir=write("xgboost", XGBOOST_SCRIPT),
            role=ROLE,
            framework_version="1.7-1",
            py_version="py3",
            instance_count=1,
            instance_type="ml.m5.large",
            hyperparameters={"num_round": 20},
            sagemaker_session=session,
            base_job_name="sdk-v2-xgboost",
        )
        results["xgboost_status"] = fitted(estimator, session, inputs)["TrainingJobStatus"]
        scores = deployed_predictions(estimator, session, probe, serializer=CSVSerializer())
        results["xgboost_endpoint_accuracy"] = float(np.mean((np.array(scores) > 0.5) == truth))
        results["xgboost_transform_accuracy"] = float(np.mean((transformed(estimator, "xgboost") > 0.5) == truth))

    def builtin_xgboost():
        """The built-in XGBoost algorithm: its image, hyperparameters, CSV with the label first."""
        estimator = Estimator(
            image_uri=image_uris.retrieve("xgboost", session.boto_region_name, "1.7-1"),
            role=ROLE,
            instance_count=1,
            instance_type="ml.m5.large",
            sagemaker_session=session,
            hyperparameters={"objective": "binary:logistic", "num_round": 20, "eval_metric": "auc"},
            base_job_name="sdk-v2-builtin",
        )
        job = fitted(
            estimator,
            session,
            {
                "train": TrainingInput(inputs["train"], content_type="text/csv"),
                "validation": TrainingInput(inputs["train"], content_type="text/csv"),
            },
        )
        results["builtin_status"] = job["TrainingJobStatus"]
        results["builtin_metrics"] = {m["MetricName"]: m["Value"] for m in job.get("FinalMetricDataList", [])}
        scores = deployed_predictions(
            estimator, session, probe, serializer=CSVSerializer(), deserializer=CSVDeserializer()
        )
        results["builtin_endpoint_accuracy"] = float(np.mean((np.array(scores) > 0.5) == truth))

    # four users at once: each flow waits mostly on the SDK's polls
    with ThreadPoolExecutor(4) as pool:
        for flow in [pool.submit(f) for f in (scikit_learn, pytorch, xgboost, builtin_xgboost)]:
            flow.result()

    # sagemaker.workflow.airflow: the config the provider's SageMakerTrainingOperator takes (run by the test)
    from sagemaker.workflow.airflow import training_config

    for_airflow = SKLearn(
        entry_point="entry.py",
        source_dir=write("sklearn", SKLEARN_SCRIPT),
        role=ROLE,
        framework_version="1.2-1",
        py_version="py3",
        instance_type="ml.m5.large",
        hyperparameters={"C": 0.5},
        sagemaker_session=session,
    )
    results["airflow_training_config"] = training_config(for_airflow, inputs, job_name="sdk-v2-airflow-config")
    results["endpoints_left"] = [
        e["EndpointName"]
        for e in session.sagemaker_client.list_endpoints()["Endpoints"]
        if e["EndpointName"].startswith("sdk-v2-")
    ]
    print("SDK-RESULTS " + json.dumps(results), flush=True)


if __name__ == "__main__":
    sys.exit(main())
