"""Batch Transform and endpoints use the default handlers of the framework the model's image is for."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from mlscale_emulator.serving.handlers import framework_of
from tests.conftest import model_tar
from tests.emulator.test_transform_jobs import transform

pytestmark = pytest.mark.emulator
SKLEARN_IMAGE = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-scikit-learn:1.2-1-cpu-py3"
# What the SageMaker Python SDK's scikit-learn examples ship: only model_fn, the container does the rest.
INFERENCE = b"""import os
import joblib

def model_fn(model_dir):
    return joblib.load(os.path.join(model_dir, "model.joblib"))
"""


def test_framework_comes_from_the_image_name():
    assert framework_of(SKLEARN_IMAGE) == "sklearn"
    assert framework_of("763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.5.1-cpu-py311") == "pytorch"
    assert framework_of("") == "pytorch"


@pytest.fixture(scope="module")
def svc(clients):
    import joblib
    from sklearn.datasets import load_digits
    from sklearn.svm import SVC

    digits = load_digits()
    model = SVC(gamma=0.001).fit(digits.data[:1500], digits.target[:1500])
    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    clients["s3"].put_object(
        Bucket="mlscale-test",
        Key="sk/model.tar.gz",
        Body=model_tar({"model.joblib": buffer.getvalue(), "code/inference.py": INFERENCE}),
    )
    features = digits.data[1500:1600]
    text = io.StringIO()
    np.savetxt(text, features, delimiter=",", fmt="%g")
    clients["s3"].put_object(Bucket="mlscale-test", Key="sk-in/features.csv", Body=text.getvalue().encode())
    for name, image in (("sk-svc", SKLEARN_IMAGE), ("sk-as-pytorch", "pytorch-inference:2")):
        clients["sagemaker"].create_model(
            ModelName=name,
            ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
            PrimaryContainer={
                "Image": image,
                "ModelDataUrl": "s3://mlscale-test/sk/model.tar.gz",
                "Environment": {"SAGEMAKER_PROGRAM": "inference.py"},
            },
        )
    return model.predict(features)


def test_a_scikit_learn_script_with_only_model_fn_transforms(clients, svc):
    job = transform(clients["sagemaker"], "sk-transform", "sk-svc", "sk-in/", accept="application/json")
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    body = clients["s3"].get_object(Bucket="mlscale-test", Key="out/sk-transform/features.csv.out")["Body"].read()
    predicted = [value for line in body.decode().splitlines() for value in np.ravel(json.loads(line))]
    assert predicted == svc.tolist()  # the container's predict_fn: model.predict


def test_the_same_model_in_a_pytorch_image_fails_as_it_would_on_sagemaker(clients, svc):
    job = transform(clients["sagemaker"], "sk-in-pytorch", "sk-as-pytorch", "sk-in/", accept="application/json")
    assert job["TransformJobStatus"] == "Failed" and "eval" in job["FailureReason"]


XGBOOST_IMAGE = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-xgboost:1.7-1"
# The SageMaker XGBoost script-mode examples' inference side: only model_fn.
XGBOOST_INFERENCE = b"""import os
import xgboost as xgb

def model_fn(model_dir):
    booster = xgb.Booster()
    booster.load_model(os.path.join(model_dir, "xgboost-model"))
    return booster
"""


@pytest.fixture(scope="module")
def booster(clients):
    import xgboost
    from sklearn.datasets import load_digits

    digits = load_digits()
    train = xgboost.DMatrix(digits.data[:1500], label=digits.target[:1500])
    model = xgboost.train({"objective": "multi:softmax", "num_class": 10, "max_depth": 4}, train, num_boost_round=20)
    raw = bytearray(model.save_raw("json"))
    features = digits.data[1500:1600]
    text = io.StringIO()
    np.savetxt(text, features, delimiter=",", fmt="%g")
    clients["s3"].put_object(Bucket="mlscale-test", Key="xgb-in/features.csv", Body=text.getvalue().encode())
    archives = {
        "xgb-script": {"xgboost-model": bytes(raw), "code/inference.py": XGBOOST_INFERENCE},
        "xgb-builtin": {"xgboost-model": bytes(raw)},
    }  # the built-in algorithm's artifact: no script
    for name, files in archives.items():
        clients["s3"].put_object(Bucket="mlscale-test", Key=f"xgb/{name}.tar.gz", Body=model_tar(files))
        environment = {"SAGEMAKER_PROGRAM": "inference.py"} if "code/inference.py" in files else {}
        clients["sagemaker"].create_model(
            ModelName=name,
            ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
            PrimaryContainer={
                "Image": XGBOOST_IMAGE,
                "Environment": environment,
                "ModelDataUrl": f"s3://mlscale-test/xgb/{name}.tar.gz",
            },
        )
    return model.predict(xgboost.DMatrix(features))


@pytest.mark.parametrize("model", ["xgb-script", "xgb-builtin"])
def test_an_xgboost_model_transforms_with_the_containers_defaults(clients, booster, model):
    job = transform(clients["sagemaker"], f"{model}-transform", model, "xgb-in/", accept="text/csv")
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    body = clients["s3"].get_object(Bucket="mlscale-test", Key=f"out/{model}-transform/features.csv.out")["Body"].read()
    predicted = [float(v) for line in body.decode().split() for v in line.split(",")]
    assert predicted == booster.tolist()  # the container's predict_fn: booster.predict on a DMatrix
    assert framework_of(XGBOOST_IMAGE) == "xgboost"


def test_xgboost_reads_libsvm_as_its_container_does(tmp_path):
    import xgboost

    from mlscale_emulator.serving.handlers import HandlerChain

    data = np.array([[5.0, 1.0, 4.0], [3.0, 6.0, 2.0]])  # no zeros: LibSVM leaves out what is missing
    model = xgboost.train({"objective": "reg:squarederror"}, xgboost.DMatrix(data, label=[1.0, 7.0]), 5)
    model.save_model(str(tmp_path / "model.json"))
    (tmp_path / "model.json").rename(tmp_path / "xgboost-model")
    chain = HandlerChain(tmp_path, None, "inference.py", "xgboost")
    csv_answer, _ = chain(b"5,1,4\n3,6,2", "text/csv", "application/json")
    libsvm_answer, _ = chain(b"0 0:5 1:1 2:4\n0 0:3 1:6 2:2", "text/libsvm", "application/json")
    assert json.loads(libsvm_answer) == pytest.approx(json.loads(csv_answer))
    assert json.loads(csv_answer) == pytest.approx(model.predict(xgboost.DMatrix(data)).tolist())


def test_an_endpoint_runs_the_inference_script_the_sdk_uploads_as_its_submit_directory(emulator, clients, svc):
    """`SKLearnModel(entry_point=..., source_dir=...).deploy()` / `estimator.deploy()`: the model archive has no
    code/; the script is an S3 sourcedir.tar.gz named by SAGEMAKER_SUBMIT_DIRECTORY, as Batch Transform reads it."""
    import boto3
    from sklearn.datasets import load_digits

    from tests.conftest import upload_source

    model = _model_member(clients, "sk/model.tar.gz", "model.joblib")  # the same model, without its code/
    clients["s3"].put_object(Bucket="mlscale-test", Key="sk-sdk/model.tar.gz", Body=model_tar({"model.joblib": model}))
    script = INFERENCE.decode() + "\ndef predict_fn(data, model):\n    return model.predict(data) + 100\n"
    sourcedir = upload_source(clients["s3"], {"serve.py": script}, "sk-sdk/sourcedir.tar.gz")
    sm = clients["sagemaker"]
    sm.create_model(
        ModelName="sk-sdk",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
        PrimaryContainer={
            "Image": SKLEARN_IMAGE,
            "ModelDataUrl": "s3://mlscale-test/sk-sdk/model.tar.gz",
            "Environment": {"SAGEMAKER_PROGRAM": "serve.py", "SAGEMAKER_SUBMIT_DIRECTORY": sourcedir},
        },
    )
    sm.create_endpoint_config(
        EndpointConfigName="sk-sdk",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": "sk-sdk",
                "InitialInstanceCount": 1,
                "InstanceType": "ml.m5.large",
            }
        ],
    )
    sm.create_endpoint(EndpointName="sk-sdk", EndpointConfigName="sk-sdk")
    sm.get_waiter("endpoint_in_service").wait(EndpointName="sk-sdk", WaiterConfig={"Delay": 1, "MaxAttempts": 120})
    try:
        runtime = boto3.client("sagemaker-runtime", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
        answer = runtime.invoke_endpoint(
            EndpointName="sk-sdk",
            ContentType="application/json",
            Accept="application/json",
            Body=json.dumps(load_digits().data[1500:1503].tolist()),
        )
        assert np.ravel(json.loads(answer["Body"].read())).tolist() == (svc[:3] + 100).tolist()  # the script's
    finally:
        sm.delete_endpoint(EndpointName="sk-sdk")


def _model_member(clients, key: str, member: str) -> bytes:
    import tarfile

    body = clients["s3"].get_object(Bucket="mlscale-test", Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body)) as tar:
        return tar.extractfile(member).read()
