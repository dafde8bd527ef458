"""Batch Transform and endpoints use the default handlers of the framework the model's image is for."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from mlscale.emulator.serving.handlers import framework_of
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
    clients["s3"].put_object(Bucket="mlscale-test", Key="sk/model.tar.gz",
                             Body=model_tar({"model.joblib": buffer.getvalue(), "code/inference.py": INFERENCE}))  # fmt: skip
    features = digits.data[1500:1600]
    text = io.StringIO()
    np.savetxt(text, features, delimiter=",", fmt="%g")
    clients["s3"].put_object(Bucket="mlscale-test", Key="sk-in/features.csv", Body=text.getvalue().encode())
    for name, image in (("sk-svc", SKLEARN_IMAGE), ("sk-as-pytorch", "pytorch-inference:2")):
        clients["sagemaker"].create_model(ModelName=name, ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
                                          PrimaryContainer={"Image": image, "ModelDataUrl": "s3://mlscale-test/sk/model.tar.gz",
                                                            "Environment": {"SAGEMAKER_PROGRAM": "inference.py"}})  # fmt: skip
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
