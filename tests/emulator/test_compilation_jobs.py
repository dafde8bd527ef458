"""Neo compilation on the emulator: a real compile, checked against the original, and Neo's failures."""

from __future__ import annotations

import io
import json
import tarfile
import time

import pytest
import torch

from tests.conftest import model_tar

pytestmark = pytest.mark.emulator


@pytest.fixture(scope="module")
def artifact(clients):
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)).eval()
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.trace(model, torch.rand(2, 64)), buffer)
    clients["s3"].put_object(
        Bucket="mlscale-test", Key="neo/model.tar.gz", Body=model_tar({"model.pt": buffer.getvalue()})
    )
    return model


def compile_job(sm, name, shapes, framework="PYTORCH", target="ml_c5"):
    sm.create_compilation_job(
        CompilationJobName=name,
        RoleArn="arn:aws:iam::123456789012:role/x",
        InputConfig={
            "S3Uri": "s3://mlscale-test/neo/model.tar.gz",
            "DataInputConfig": json.dumps(shapes),
            "Framework": framework,
        },
        OutputConfig={"S3OutputLocation": "s3://mlscale-test/neo/out/", "TargetDevice": target},
        StoppingCondition={"MaxRuntimeInSeconds": 900},
    )
    for _ in range(300):
        job = sm.describe_compilation_job(CompilationJobName=name)
        if job["CompilationJobStatus"] not in ("INPROGRESS", "STARTING"):
            return job
        time.sleep(0.2)
    raise TimeoutError(name)


def test_compiles_and_the_compiled_model_answers_like_the_original(clients, artifact):
    job = compile_job(clients["sagemaker"], "neo-ok", {"input0": [1, 64]})
    assert job["CompilationJobStatus"] == "COMPLETED", job.get("FailureReason")
    assert job["ModelArtifacts"]["S3ModelArtifacts"] == "s3://mlscale-test/neo/out/model-ml_c5.tar.gz"
    body = clients["s3"].get_object(Bucket="mlscale-test", Key="neo/out/model-ml_c5.tar.gz")["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body)) as tar:
        report = json.load(tar.extractfile("compilation.json"))
        compiled = torch.jit.load(io.BytesIO(tar.extractfile("model.pt").read()))
    assert report["max_abs_diff"] <= 1e-4 and report["target"] == "ml_c5"
    x = torch.rand(1, 64)
    assert torch.allclose(compiled(x), artifact(x), atol=1e-4)


def test_the_compiler_runs_in_a_process_of_its_own_not_in_the_emulator_server(clients, artifact, emulator):
    import psutil

    from mlscale_emulator import control

    job = compile_job(clients["sagemaker"], "neo-process", {"input0": [1, 64]})
    assert job["CompilationJobStatus"] == "COMPLETED", job.get("FailureReason")
    server = psutil.Process(control.running_pid(emulator))
    assert not [m.path for m in server.memory_maps() if "libtorch" in m.path]  # torch is ~200 MB resident


def test_a_wrong_input_shape_fails_with_the_reason(clients, artifact):
    job = compile_job(clients["sagemaker"], "neo-shape", {"input0": [1, 3, 224, 224]})
    assert job["CompilationJobStatus"] == "FAILED"
    assert "does not accept inputs of shape [[1, 3, 224, 224]]" in job["FailureReason"]


def test_an_unsupported_framework_fails_with_the_reason(clients, artifact):
    job = compile_job(clients["sagemaker"], "neo-tflite", {"input0": [1, 64]}, framework="TFLITE")
    assert job["CompilationJobStatus"] == "FAILED" and "Framework TFLITE is not emulated" in job["FailureReason"]


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"target_device": "ml_q9"}, "target_device: must be one of botocore's TargetDevice values"),
        (
            {"target_device": None, "target_platform": {"Os": "LINUX", "Arch": "SPARC"}},
            "target_platform.Arch: must be one of",
        ),
        (
            {"target_platform": {"Os": "LINUX", "Arch": "ARM64"}},
            "target_device: give target_device or target_platform, not both",
        ),
        ({"framework": "CAFFE"}, "framework: must be one of"),
        ({"input_shapes": {"input0": [1, -64]}}, "input_shapes['input0']: must be a list of positive integers"),
    ],
)
def test_bad_compilation_specs(overrides, message):
    from mlscale.specs import CompilationSpec, SpecError

    spec = CompilationSpec(
        "s3://bkt/m/model.tar.gz", "arn:aws:iam::123456789012:role/x", "s3://bkt/out/", {"input0": [1, 64]}
    )
    for key, value in overrides.items():
        setattr(spec, key, value)
    with pytest.raises(
        SpecError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(").replace(")", r"\)")
    ):
        spec.validate()
