"""Training curves for the run view: metric series from the job's own log lines, drawn as inline SVG."""

from __future__ import annotations

import html

from mlscale.metric_regex import MetricRegexError, compile_metric


def metric_series(lines: list[str], definitions: dict[str, str]) -> dict[str, list[float]]:
    """Each MetricDefinition's values in log order (one per epoch for the example script)."""
    patterns = {}
    for name, regex in definitions.items():
        try:
            patterns[name] = compile_metric(regex)
        except MetricRegexError:  # a job made elsewhere may carry one RE2 cannot run: no curve for it
            continue
    series: dict[str, list[float]] = {name: [] for name in definitions}
    for line in lines:
        for name, pattern in patterns.items():
            match = pattern.search(line)
            if match:
                try:
                    series[name].append(float(match.group(1)))
                except (IndexError, ValueError):
                    continue
    return {name: values for name, values in series.items() if values}


def svg_line(name: str, values: list[float], width: int = 320, height: int = 120) -> str:
    low, high = min(values), max(values)
    spread = (high - low) or 1.0
    step = width / max(len(values) - 1, 1)
    points = " ".join(
        f"{i * step:.1f},{height - 10 - (v - low) / spread * (height - 20):.1f}" for i, v in enumerate(values)
    )
    label = f"{name}: {values[0]:.4g} -> {values[-1]:.4g} over {len(values)} points"
    return (
        f"<figure><svg width='{width}' height='{height}' role='img' aria-label='{html.escape(label)}'>"
        f"<polyline fill='none' stroke='#4c72b0' stroke-width='2' points='{points}'/></svg>"
        f"<figcaption>{html.escape(label)}</figcaption></figure>"
    )


def training_log(job_name: str, conn_id: str) -> tuple[list[str], dict[str, str]]:
    """algo-1's log lines and the job's MetricDefinitions, through the AWS connection."""
    from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook

    hook = SageMakerHook(aws_conn_id=conn_id)
    job = hook.describe_training_job(job_name)
    definitions = {d["Name"]: d["Regex"] for d in job.get("AlgorithmSpecification", {}).get("MetricDefinitions", [])}
    logs = hook.logs_hook.get_conn()
    streams = logs.describe_log_streams(
        logGroupName="/aws/sagemaker/TrainingJobs", logStreamNamePrefix=f"{job_name}/algo-1-"
    )
    lines: list[str] = []
    for stream in streams.get("logStreams", [])[:1]:
        lines = [
            e["message"] for e in hook.logs_hook.get_log_events("/aws/sagemaker/TrainingJobs", stream["logStreamName"])
        ]
    return lines, definitions
