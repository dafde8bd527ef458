"""What a settled resource's XCom says: the few fields of its Describe answer a DAG passes on (a training job's
model artifact and final metrics, a processing job's outputs as `<name>_uri`, ...)."""

from __future__ import annotations

from typing import Any


def training_summary(d: dict) -> dict[str, Any]:
    return {
        "job_name": d["TrainingJobName"],
        "job_arn": d["TrainingJobArn"],
        "status": d["TrainingJobStatus"],
        "instance_count": d["ResourceConfig"]["InstanceCount"],
        "instance_type": d["ResourceConfig"]["InstanceType"],
        "model_artifact": d.get("ModelArtifacts", {}).get("S3ModelArtifacts"),
        "final_metrics": {m["MetricName"]: m["Value"] for m in d.get("FinalMetricDataList", [])},
        "billable_seconds": d.get("BillableTimeInSeconds"),
        "training_seconds": d.get("TrainingTimeInSeconds"),
    }


def processing_summary(d: dict) -> dict[str, Any]:
    """Also each output as `<name>_uri`: a DAG passes `shard.output["shards_uri"]` on (an XComArg's [] is a key)."""
    outputs = {
        o["OutputName"]: o["S3Output"]["S3Uri"]
        for o in (d.get("ProcessingOutputConfig") or {}).get("Outputs", [])
        if "S3Output" in o
    }
    return {
        "job_name": d["ProcessingJobName"],
        "job_arn": d.get("ProcessingJobArn"),
        "status": d["ProcessingJobStatus"],
        "outputs": outputs,
        **{f"{name}_uri": uri for name, uri in outputs.items()},
        "exit_message": d.get("ExitMessage"),
    }


def transform_summary(d: dict) -> dict[str, Any]:
    return {
        "job_name": d["TransformJobName"],
        "status": d["TransformJobStatus"],
        "output_path": (d.get("TransformOutput") or {}).get("S3OutputPath"),
        "model_name": d.get("ModelName"),
    }


def compilation_summary(d: dict) -> dict[str, Any]:
    output = d.get("OutputConfig", {})
    start, end = d.get("CompilationStartTime"), d.get("CompilationEndTime")
    return {
        "job_name": d["CompilationJobName"],
        "status": d["CompilationJobStatus"],
        "compiled_artifact": d.get("ModelArtifacts", {}).get("S3ModelArtifacts"),
        "target": output.get("TargetDevice") or output.get("TargetPlatform"),
        "input_shapes": d.get("InputConfig", {}).get("DataInputConfig"),
        "seconds": (end - start).total_seconds() if start and end and not isinstance(start, str) else None,
    }


def batch_summary(d: dict) -> dict[str, Any]:
    nodes = d.get("nodeProperties") or {}
    containers = [r.get("container") or {} for r in nodes.get("nodeRangeProperties") or []] or [
        d.get("container") or {}
    ]
    environment = {e["name"]: e["value"] for e in containers[0].get("environment") or []}
    return {
        "job_id": d["jobId"],
        "job_name": d["jobName"],
        "status": d["status"],
        "node_count": nodes.get("numNodes", 1),
        "main_node_index": nodes.get("mainNode", 0),
        "job_queue": d.get("jobQueue"),
        "job_definition": d.get("jobDefinition"),
        "attempts": len(d.get("attempts") or []),
        "model_artifact": environment.get("MLSCALE_MODEL_URI"),
        "seconds": (d["stoppedAt"] - d["startedAt"]) / 1000 if d.get("stoppedAt") and d.get("startedAt") else None,
    }
