"""SageMakerBatchEvaluationOperator: metrics from a real transform, the gate, the model registry."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch

from mlscale.operators import SageMakerBatchEvaluationOperator
from mlscale.specs import EvaluationSpec, SpecError
from tests.conftest import ROLE_ARN, model_tar
from tests.operators.test_training_operator import FakeTI

pytestmark = pytest.mark.emulator
GROUP = "eval-test-models"


def scripted(weight: torch.Tensor) -> bytes:
    layer = torch.nn.Linear(10, 10, bias=False)
    layer.weight.data = weight
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(layer), buffer)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def held_out(clients):
    """200 records whose features point at their label: an identity model is perfect."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, 200)
    features = np.eye(10)[labels] + rng.normal(0, 0.05, (200, 10))
    s3 = clients["s3"]
    s3.put_object(
        Bucket="mlscale-test",
        Key="eval-op/features/features-algo-1.csv",
        Body="\n".join(",".join(f"{v:.3f}" for v in row) for row in features).encode(),
    )
    s3.put_object(
        Bucket="mlscale-test",
        Key="eval-op/labels/labels-algo-1.csv",
        Body="\n".join(str(int(v)) for v in labels).encode(),
    )
    models = {
        "perfect": torch.eye(10),
        "constant": torch.zeros(10, 10).index_fill_(0, torch.tensor([3]), 1.0),
        "slightly-worse": torch.eye(10).index_fill_(0, torch.tensor([0]), 0.0),
    }
    for name, weight in models.items():
        s3.put_object(
            Bucket="mlscale-test",
            Key=f"eval-op/models/{name}/model.tar.gz",
            Body=model_tar({"model.pt": scripted(weight)}),
        )
    return labels


def evaluate(model: str, run: str, **overrides) -> dict:
    overrides = {"model_package_group": GROUP, "min_value": 0.9, **overrides}
    spec = EvaluationSpec(
        model_artifact=f"s3://mlscale-test/eval-op/models/{model}/model.tar.gz",
        role_arn=ROLE_ARN,
        image_uri="pytorch-inference:2",
        features_uri="s3://mlscale-test/eval-op/features/",
        labels_uri="s3://mlscale-test/eval-op/labels/",
        output_uri=f"s3://mlscale-test/eval-op/runs/{run}/",
        champion_tolerance=0.05,
        **overrides,
    )
    operator = SageMakerBatchEvaluationOperator(task_id="evaluate", spec=spec, deferrable=False, poll_interval=0.3)
    return operator.execute({"ti": FakeTI("evaluate", run_id=run)})


def test_gate_approves_rejects_and_compares_with_the_champion(emulator, clients, held_out):
    first = evaluate("perfect", "run-1")
    assert first["metrics"]["accuracy"] == 1.0 and first["decision"] == "Approved"
    assert "no approved champion yet" in first["reasons"]
    report = json.loads(
        clients["s3"].get_object(Bucket="mlscale-test", Key="eval-op/runs/run-1/evaluation.json")["Body"].read()
    )
    assert report["metrics"]["confusion_matrix"][3][3] == int((held_out == 3).sum())
    png = clients["s3"].get_object(Bucket="mlscale-test", Key="eval-op/runs/run-1/confusion_matrix.png")["Body"].read()
    assert png.startswith(b"\x89PNG")

    close = evaluate("slightly-worse", "run-2")  # loses class 0 (~10%): below 0.9 and worse than the champion
    assert close["decision"] == "Rejected"
    assert any("below the threshold 0.9000" in r for r in close["reasons"])
    assert any("worse than the champion's 1.0000 by more than 0.0500" in r for r in close["reasons"])

    bad = evaluate("constant", "run-3")
    assert bad["decision"] == "Rejected" and bad["metrics"]["accuracy"] < 0.2

    sagemaker = clients["sagemaker"]
    packages = sagemaker.list_model_packages(ModelPackageGroupName=GROUP)["ModelPackageSummaryList"]
    statuses = sorted(p["ModelApprovalStatus"] for p in packages)
    assert statuses == ["Approved", "Rejected", "Rejected"]
    described = sagemaker.describe_model_package(ModelPackageName=first["model_package_arn"])
    assert described["ModelMetrics"]["ModelQuality"]["Statistics"]["S3Uri"] == first["evaluation_uri"]


def test_a_retry_registers_the_model_once(emulator, clients, held_out):
    once = evaluate("perfect", "run-retry")
    again = evaluate("perfect", "run-retry")  # the transform job is reused and the package found, not duplicated
    assert again["model_package_arn"] == once["model_package_arn"]
    assert again["transform_job"] == once["transform_job"]


def test_a_retry_never_takes_its_own_package_for_the_champion(emulator, clients, held_out):
    group = {"model_package_group": "eval-test-champion", "min_value": 0.5}
    champion = evaluate("slightly-worse", "run-champion", **group)
    assert champion["decision"] == "Approved"
    once = evaluate("perfect", "run-candidate", **group)
    again = evaluate("perfect", "run-candidate", **group)  # the retry finds its own Approved package, newest
    assert again["model_package_arn"] == once["model_package_arn"]
    report = json.loads(
        clients["s3"].get_object(Bucket="mlscale-test", Key="eval-op/runs/run-candidate/evaluation.json")["Body"].read()
    )
    assert report["champion"]["arn"] == champion["model_package_arn"]
    assert report["champion"]["value"] == champion["metrics"]["accuracy"]


def test_manual_approval_registers_pending(emulator, clients, held_out):
    assert evaluate("perfect", "run-manual", manual_approval=True)["decision"] == "PendingManualApproval"


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"model_artifact": "s3://mlscale-test/model.pt"}, "model_artifact: must be a model.tar.gz"),
        ({"min_value": 1.5}, "min_value: must be from 0 to 1"),
        ({"metric": "auc"}, "metric: must be one of"),
        ({"model_package_group": "bad_group!"}, "model_package_group: must be 1-63 letters"),
    ],
)
def test_bad_evaluation_specs(overrides, message):
    spec = EvaluationSpec(
        model_artifact="s3://bkt/m/model.tar.gz",
        role_arn=ROLE_ARN,
        image_uri="i",
        features_uri="s3://bkt/f/",
        labels_uri="s3://bkt/l/",
        output_uri="s3://bkt/o/",
        model_package_group="group",
    )
    for key, value in overrides.items():
        setattr(spec, key, value)
    with pytest.raises(SpecError, match=message):
        spec.validate()
