"""Batch Transform on the emulator: a real model server answers every record, as SageMaker's would."""

from __future__ import annotations

import io
import json
import time

import numpy as np
import pytest
import torch

from tests.conftest import model_tar  # noqa: E402

pytestmark = pytest.mark.emulator
WEIGHTS = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, -1.0]])


def torchscript_model() -> bytes:
    layer = torch.nn.Linear(4, 3, bias=False)
    layer.weight.data = WEIGHTS.clone()
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(layer), buffer)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def models(clients):
    s3, sm = clients["s3"], clients["sagemaker"]
    s3.put_object(Bucket="mlscale-test", Key="tr/model.tar.gz", Body=model_tar({"model.pt": torchscript_model()}))
    custom = (
        b"import json\n"
        b"def model_fn(model_dir):\n    return {'scale': float(open(model_dir + '/scale.txt').read())}\n"
        b"def input_fn(body, content_type):\n    return json.loads(body)['values']\n"
        b"def predict_fn(data, model):\n    return [v * model['scale'] for v in data]\n"
        b"def output_fn(prediction, accept):\n    return json.dumps({'scaled': prediction}), 'application/json'\n"
    )
    s3.put_object(
        Bucket="mlscale-test", Key="tr/custom.tar.gz", Body=model_tar({"scale.txt": b"3", "code/inference.py": custom})
    )
    mixed = b"def transform_fn(model, body, ct, accept):\n    return body\ndef input_fn(body, ct):\n    return body\n"
    s3.put_object(
        Bucket="mlscale-test",
        Key="tr/mixed.tar.gz",
        Body=model_tar({"model.pt": torchscript_model(), "code/inference.py": mixed}),
    )
    for name, key in (("tr-default", "model"), ("tr-custom", "custom"), ("tr-mixed", "mixed")):
        sm.create_model(
            ModelName=name,
            ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
            PrimaryContainer={"Image": "pytorch-inference:2", "ModelDataUrl": f"s3://mlscale-test/tr/{key}.tar.gz"},
        )
    return sm


def transform(
    sm,
    name,
    model,
    prefix,
    content_type="text/csv",
    split="Line",
    strategy="MultiRecord",
    instances=1,
    accept="text/csv",
    assemble="Line",
    payload=6,
):
    sm.create_transform_job(
        TransformJobName=name,
        ModelName=model,
        BatchStrategy=strategy,
        MaxPayloadInMB=payload,
        TransformInput={
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://mlscale-test/{prefix}"}},
            "ContentType": content_type,
            "SplitType": split,
        },
        TransformOutput={"S3OutputPath": f"s3://mlscale-test/out/{name}/", "Accept": accept, "AssembleWith": assemble},
        TransformResources={"InstanceType": "ml.m5.large", "InstanceCount": instances},
    )
    # not born Completed, as moto would have it (a job with no model may already have failed)
    assert sm.describe_transform_job(TransformJobName=name)["TransformJobStatus"] in ("InProgress", "Failed")
    for _ in range(600):
        job = sm.describe_transform_job(TransformJobName=name)
        if job["TransformJobStatus"] not in ("InProgress", "Stopping"):
            return job
        time.sleep(0.2)
    raise TimeoutError(name)


def read(s3, key):
    return s3.get_object(Bucket="mlscale-test", Key=key)["Body"].read().decode()


def put_csv(s3, key, rows):
    s3.put_object(Bucket="mlscale-test", Key=key, Body="\n".join(",".join(map(str, r)) for r in rows).encode())


@pytest.mark.parametrize("strategy", ["MultiRecord", "SingleRecord"])
def test_lines_through_the_default_pytorch_handlers(models, clients, strategy):
    rows = np.random.default_rng(1).normal(size=(50, 4)).round(3)
    put_csv(clients["s3"], f"in-{strategy}/batch.csv", rows)
    job = transform(models, f"tr-lines-{strategy.lower()}", "tr-default", f"in-{strategy}/", strategy=strategy)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    out = read(clients["s3"], f"out/tr-lines-{strategy.lower()}/batch.csv.out").strip().split("\n")
    assert len(out) == 50  # one output line per record, in order
    expected = rows @ WEIGHTS.numpy().T
    assert np.allclose(np.array([[float(v) for v in line.split(",")] for line in out]), expected, atol=1e-3)


def test_multirecord_packs_records_up_to_the_payload_limit():
    from mlscale_emulator.executors.transform import TransformFailed, batches

    records = [b"x" * 400_000] * 5  # two fit in 1 MB with the newline between them, three do not
    assert [len(b) for b in batches(records, "MultiRecord", 1, "Line")] == [800_001, 800_001, 400_000]
    assert len(batches(records, "SingleRecord", 1, "Line")) == 5
    assert len(batches(records, "MultiRecord", 0, "Line")) == 1  # 0: no limit (chunked)
    with pytest.raises(TransformFailed, match="a record of 2000000 bytes exceeds MaxPayloadInMB 1"):
        batches([b"x" * 2_000_000], "MultiRecord", 1, "Line")


def test_a_large_file_in_many_requests_keeps_every_line_in_order(models, clients):
    rows = np.arange(12000).reshape(3000, 4) / 1000.0
    put_csv(clients["s3"], "in-big/a.csv", rows)
    job = transform(models, "tr-big", "tr-default", "in-big/", payload=0)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    out = read(clients["s3"], "out/tr-big/a.csv.out").strip().split("\n")
    assert len(out) == 3000 and float(out[-1].split(",")[0]) == pytest.approx(rows[-1, 0], abs=1e-3)


def test_whole_objects_with_a_custom_inference_script_and_two_instances(models, clients):
    for i in range(4):
        clients["s3"].put_object(
            Bucket="mlscale-test", Key=f"in-json/doc-{i}.json", Body=json.dumps({"values": [i, i + 1]}).encode()
        )
    job = transform(
        models,
        "tr-custom-json",
        "tr-custom",
        "in-json/",
        content_type="application/json",
        split="None",
        accept="application/json",
        assemble="None",
        instances=2,
    )
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    for i in range(4):
        assert json.loads(read(clients["s3"], f"out/tr-custom-json/doc-{i}.json.out")) == {
            "scaled": [3 * i, 3 * (i + 1)]
        }


def test_transform_fn_mixed_with_input_fn_fails_with_the_reason(models, clients):
    put_csv(clients["s3"], "in-mixed/a.csv", [[1, 2, 3, 4]])
    job = transform(models, "tr-mixed-job", "tr-mixed", "in-mixed/")
    assert job["TransformJobStatus"] == "Failed"
    assert "transform_fn cannot be combined with input_fn" in job["FailureReason"]


def test_unsupported_content_type_is_a_415(models, clients):
    put_csv(clients["s3"], "in-xml/a.xml", [[1, 2, 3, 4]])
    job = transform(models, "tr-xml", "tr-default", "in-xml/", content_type="application/xml")
    assert job["TransformJobStatus"] == "Failed"
    assert "the model answered 415" in job["FailureReason"] and "application/xml" in job["FailureReason"]


def test_missing_model_fails(clients):
    put_csv(clients["s3"], "in-nomodel/a.csv", [[1, 2, 3, 4]])
    job = transform(clients["sagemaker"], "tr-nomodel", "no-such-model", "in-nomodel/")
    assert job["TransformJobStatus"] == "Failed" and "no-such-model" in job["FailureReason"]


def test_input_filter_join_and_output_filter(models, clients):
    """Drop the id column before the model, join the prediction back to the input, keep id + prediction."""
    rows = [[100 + i, *np.round(np.random.default_rng(i).normal(size=4), 3)] for i in range(5)]
    put_csv(clients["s3"], "in-join/a.csv", rows)
    models.create_transform_job(
        TransformJobName="tr-join",
        ModelName="tr-default",
        BatchStrategy="MultiRecord",
        TransformInput={
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://mlscale-test/in-join/"}},
            "ContentType": "text/csv",
            "SplitType": "Line",
        },
        TransformOutput={
            "S3OutputPath": "s3://mlscale-test/out/tr-join/",
            "Accept": "text/csv",
            "AssembleWith": "Line",
        },
        TransformResources={"InstanceType": "ml.m5.large", "InstanceCount": 1},
        DataProcessing={"InputFilter": "$[1:]", "JoinSource": "Input", "OutputFilter": "$[0,5,6,7]"},
    )
    for _ in range(300):
        job = models.describe_transform_job(TransformJobName="tr-join")
        if job["TransformJobStatus"] != "InProgress":
            break
        time.sleep(0.2)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    lines = read(clients["s3"], "out/tr-join/a.csv.out").strip().split("\n")
    for row, line in zip(rows, lines):
        values = [float(v) for v in line.split(",")]
        assert values[0] == row[0]  # the id column, joined back from the input
        assert np.allclose(values[1:], np.asarray(row[1:]) @ WEIGHTS.numpy().T, atol=1e-3)


@pytest.mark.parametrize(
    "path, record, expected",
    [
        ("$", [1, 2], [1, 2]),
        ("$[1:]", ["a", "b", "c"], ["b", "c"]),
        ("$[0,2]", ["a", "b", "c"], ["a", "c"]),
        ("$[-1]", ["a", "b"], "b"),
        ("$.features", {"features": [1, 2]}, [1, 2]),
        ("$['id']", {"id": 7}, 7),
        ("$.a.b[1]", {"a": {"b": [5, 6]}}, 6),
    ],
)
def test_jsonpath_subset(path, record, expected):
    from mlscale_emulator.executors.data_processing import select

    assert select(record, path) == expected


@pytest.mark.parametrize("path", ["features", "$..features", "$[*]", "$.a[?(@.x)]"])
def test_jsonpath_outside_the_subset_is_refused(path):
    from mlscale_emulator.executors.data_processing import FilterError, select

    with pytest.raises(FilterError):
        select({"features": [1]}, path)


def test_stop_transform_job(models, clients):
    slow = b"import time\ndef model_fn(model_dir):\n    return None\ndef transform_fn(model, body, ct, accept):\n    time.sleep(30)\n    return body\n"  # noqa: E501
    clients["s3"].put_object(Bucket="mlscale-test", Key="tr/slow.tar.gz", Body=model_tar({"code/inference.py": slow}))
    models.create_model(
        ModelName="tr-slow",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
        PrimaryContainer={"Image": "i", "ModelDataUrl": "s3://mlscale-test/tr/slow.tar.gz"},
    )
    put_csv(clients["s3"], "in-slow/a.csv", [[1, 2, 3, 4]])
    models.create_transform_job(
        TransformJobName="tr-stopped",
        ModelName="tr-slow",
        TransformInput={
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://mlscale-test/in-slow/"}},
            "ContentType": "text/csv",
            "SplitType": "Line",
        },
        TransformOutput={"S3OutputPath": "s3://mlscale-test/out/tr-stopped/"},
        TransformResources={"InstanceType": "ml.m5.large", "InstanceCount": 1},
    )
    time.sleep(2)
    models.stop_transform_job(TransformJobName="tr-stopped")
    for _ in range(200):
        job = models.describe_transform_job(TransformJobName="tr-stopped")
        if job["TransformJobStatus"] not in ("InProgress", "Stopping"):
            break
        time.sleep(0.2)
    assert job["TransformJobStatus"] == "Stopped"
