"""The run view's HTML: stage timeline, data quality, training, diagnosis, evaluation, deployment, lineage."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from mlscale.ui.run_record import RunRecord

STYLE = """body{font-family:sans-serif;margin:1.5em;color:#222} h1{font-size:1.3em} h2{font-size:1.1em;margin-top:1.5em}
table{border-collapse:collapse} td,th{padding:.25em .7em;border-bottom:1px solid #eee;text-align:left}
.bar{background:#4c72b0;height:.8em;display:inline-block} .failed{color:#c22} .success{color:#2a7}
.lineage span{display:inline-block;border:1px solid #999;border-radius:4px;padding:.3em .5em;margin:.2em}
img{max-width:460px;margin:.5em;border:1px solid #eee}"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def timeline(record: RunRecord) -> str:
    starts = [t.start for t in record.tasks if t.start]
    ends = [t.end for t in record.tasks if t.end]
    origin = min(starts) if starts else None
    span = max(((max(ends) - origin).total_seconds() if ends and origin else 0.0), 1e-9)
    rows = []
    for task in record.tasks:
        offset = (task.start - origin).total_seconds() / span * 100 if task.start and origin else 0
        width = max((task.seconds or 0) / span * 100, 0.5)
        seconds = f"{task.seconds:.1f} s" if task.seconds is not None else "-"
        state_class = (
            "failed" if task.state in ("failed", "upstream_failed") else "success" if task.state == "success" else ""
        )
        rows.append(
            f"<tr><td>{_e(task.task_id)}</td><td class='{state_class}'>{_e(task.state)}</td><td>{seconds}</td>"
            "<td style='width:320px'>"
            f"<span class='bar' style='margin-left:{offset:.1f}%;width:{width:.1f}%'></span></td>"
            f"<td>{cache_cell(record.xcoms.get(task.task_id))}</td></tr>"
        )
    return (
        "<table><tr><th>stage</th><th>state</th><th>duration</th><th>timeline</th><th>stage cache</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def cache_cell(result: Any) -> str:
    """What the stage cache did for a task: reused which job from which run, or ran; and its fingerprint."""
    if not isinstance(result, dict) or "fingerprint" not in result:
        return ""
    cache, short = result.get("cache") or {}, _e(str(result["fingerprint"])[:12])
    if cache.get("hit"):
        return (
            f"reused {_e(cache.get('reused'))} from run {_e(cache.get('from_run'))} "
            f"<small title='{_e(result['fingerprint'])}'>({short})</small>"
        )
    state = "ran; recorded" if cache.get("enabled") else "ran (cache off)"
    return f"{state} <small title='{_e(result['fingerprint'])}'>({short})</small>"


def _image(artifact: Callable[[str], str], uri: str | None, alt: str) -> str:
    return f"<img src='{_e(artifact(uri))}' alt='{_e(alt)}'>" if uri else ""


def _dataset_name(item: dict[str, Any]) -> str:
    namespace, name = item.get("namespace", ""), item.get("name", "")
    return f"{namespace}/{name}" if namespace.startswith("s3://") else f"{namespace}:{name}"


def lineage(record: RunRecord) -> str:
    """The datasets each stage read and wrote, from the same facts it reports to OpenLineage (its XCom's
    `lineage`); a run recorded before stages reported lineage shows the XCom values it has instead."""
    staged = [
        (t.task_id, record.xcoms[t.task_id]["lineage"])
        for t in record.tasks
        if isinstance(record.xcoms.get(t.task_id), dict) and record.xcoms[t.task_id].get("lineage")
    ]
    if staged:
        first_inputs = "<br>".join(_e(_dataset_name(d)) for d in staged[0][1].get("inputs", [])[:3])
        boxes = [f"<span><b>read</b><br>{first_inputs}</span>"] + [
            f"<span><b>{_e(task)}</b><br>{'<br>'.join(_e(_dataset_name(d)) for d in facts.get('outputs', []))}</span>"
            for task, facts in staged
        ]
        return "<div class='lineage'>" + " &rarr; ".join(boxes) + "</div>"
    outputs = record.stage("processing").get("outputs") or {}
    steps = [
        ("data", record.stage("quality").get("data_prefix")),
        ("shards", outputs.get("shards") or next(iter(outputs.values()), None)),
        ("training job", record.stage("training").get("job_name")),
        ("model", record.stage("training").get("model_artifact")),
        ("model package", record.stage("evaluation").get("model_package_arn")),
        ("compiled", record.stage("compilation").get("compiled_artifact")),
        ("endpoint", record.stage("endpoint").get("endpoint_name")),
        ("edge deployment", record.stage("edge").get("deployment_id")),
    ]
    return (
        "<div class='lineage'>"
        + " &rarr; ".join(f"<span><b>{_e(name)}</b><br>{_e(value)}</span>" for name, value in steps if value)
        + "</div>"
    )


def render(record: RunRecord, artifact: Callable[[str], str]) -> str:
    """The page; `artifact(uri)` gives the URL that serves an S3 object of this run."""
    failed_quality = [v for k, v in record.extra.items() if k.endswith(".quality") and isinstance(v, dict)]
    quality = record.stage("quality") or (failed_quality[0] if failed_quality else {})
    train, diagnosis, evaluation = record.stage("training"), record.stage("diagnosis"), record.stage("evaluation")
    parts = [
        f"<h1>mlscale run {_e(record.dag_id)} / {_e(record.run_id)}: {_e(record.state)}</h1>",
        "<h2>Stages</h2>",
        timeline(record),
        "<h2>Lineage</h2>",
        lineage(record),
    ]
    if not record.has_stages():
        parts.append("<p>This DAG run has no mlscale stages: nothing more to show.</p>")
    if quality:
        checks = "".join(f"<li>{_e(c)}</li>" for c in quality.get("checks", []))
        plots = "".join(_image(artifact, p, p.rsplit("/", 1)[-1]) for p in quality.get("plots", []))
        parts += [
            f"<h2>Data quality: {_e(quality.get('verdict'))}</h2>",
            f"<ul>{checks}</ul>",
            plots,
            f"<p><a href='{_e(artifact(quality.get('report_uri')))}'>full report</a></p>",
        ]
    if train:
        metrics = "".join(
            f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in train.get("final_metrics", {}).items()
        )
        if "node_count" in train:  # an AWS Batch multi-node job
            where = (
                f"AWS Batch job {_e(train.get('job_id'))}: {_e(train.get('node_count'))} nodes, "
                f"{_e(train.get('attempts'))} attempt(s), {_e(train.get('seconds'))} s"
            )
        else:
            where = (
                f"{_e(train.get('instance_count'))} x {_e(train.get('instance_type'))}, "
                f"{_e(train.get('billable_seconds'))} billable seconds"
            )
        parts += [f"<h2>Training: {_e(train.get('job_name'))}</h2>", f"<p>{where}</p><table>{metrics}</table>"]
        if record.curves:
            from mlscale.ui.curves import svg_line

            parts += ["<h3>Training curves</h3>"] + [svg_line(n, v) for n, v in sorted(record.curves.items())]
        elif record.curves_error:
            parts.append(f"<p>{_e(record.curves_error)}</p>")
    if diagnosis:
        step = diagnosis.get("recommendation") or {}
        parts += [
            f"<h2>Diagnosis: {_e(diagnosis.get('verdict'))}</h2>",
            f"<p>{_e('; '.join(diagnosis.get('reasons', [])))}</p>",
            f"<p>Next: {_e(step.get('step'))} - {_e(step.get('instance_count'))} x {_e(step.get('instance_type'))}: "
            f"{_e('; '.join(step.get('changes', [])))}</p>"
            if step
            else "",
        ]
    if evaluation:
        metrics = evaluation.get("metrics", {})
        parts += [
            f"<h2>Evaluation: gate {_e(evaluation.get('decision'))}</h2>",
            f"<p>accuracy {_e(metrics.get('accuracy'))}, macro-F1 {_e(metrics.get('macro_f1'))} on "
            f"{_e(metrics.get('samples'))} records; {_e('; '.join(evaluation.get('reasons', [])))}</p>",
            _image(artifact, evaluation.get("confusion_matrix_uri"), "confusion matrix"),
            f"<p>model package {_e(evaluation.get('model_package_arn'))}</p>",
        ]
    edge, endpoint = record.stage("edge"), record.stage("endpoint")
    if endpoint or edge:
        devices = "".join(
            f"<li>{_e(t)}: {_e(d.get('status'))}, answer {_e(d.get('answer'))}</li>"
            for t, d in sorted((edge.get("devices") or {}).items())
        )
        parts += [
            "<h2>Deployment</h2>",
            f"<p>endpoint {_e(endpoint.get('endpoint_name'))}: {_e(endpoint.get('sample_answer'))}</p>",
            f"<ul>{devices}</ul>",
        ]
    head = f"<head><meta charset='utf-8'><title>mlscale run</title><style>{STYLE}</style></head>"
    return f"<!doctype html><html>{head}<body>{''.join(parts)}</body></html>"
