"""The emulator's own console pages: what the AWS console shows for one resource, where extra links point.

GET /moto-api/mlscale/<kind>/<name> renders the resource's Describe* answer and, for jobs, its CloudWatch
log streams. It reads through the emulator's own API, as the AWS console reads through AWS's.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from botocore.exceptions import ClientError

from mlscale_emulator import settings

LOG_LINES = 400


@dataclass(frozen=True)
class Page:
    title: str
    service: str
    describe: Callable  # (client, name) -> dict
    log_group: str | None = None


def _call(method: str, field: str):
    return lambda client, name: getattr(client, method)(**{field: name})


PAGES = {
    "training-jobs": Page(
        "Training job", "sagemaker", _call("describe_training_job", "TrainingJobName"), "/aws/sagemaker/TrainingJobs"
    ),
    "processing-jobs": Page(
        "Processing job",
        "sagemaker",
        _call("describe_processing_job", "ProcessingJobName"),
        "/aws/sagemaker/ProcessingJobs",
    ),
    "transform-jobs": Page(
        "Batch transform job",
        "sagemaker",
        _call("describe_transform_job", "TransformJobName"),
        "/aws/sagemaker/TransformJobs",
    ),
    "compilation-jobs": Page(
        "Compilation job",
        "sagemaker",
        _call("describe_compilation_job", "CompilationJobName"),
        "/aws/sagemaker/CompilationJobs",
    ),
    "endpoints": Page("Endpoint", "sagemaker", _call("describe_endpoint", "EndpointName"), "/aws/sagemaker/Endpoints"),
    "model-packages": Page("Model package", "sagemaker", _call("describe_model_package", "ModelPackageName")),
    "file-systems": Page(
        "FSx for Lustre file system",
        "fsx",
        lambda client, name: client.describe_file_systems(FileSystemIds=[name])["FileSystems"][0],
    ),
    "greengrass-deployments": Page("Greengrass deployment", "greengrassv2", _call("get_deployment", "deploymentId")),
}


def console_page(request, full_url, headers):
    """moto URL handler: (status, headers, body)."""
    kind, _, name = urlparse(full_url).path.split("/moto-api/mlscale/", 1)[1].partition("/")
    name = unquote(name)
    page = PAGES.get(kind)
    if page is None or not name:
        return 404, {"Content-Type": "text/plain"}, f"no console page for {kind!r}; pages: {', '.join(PAGES)}"
    client = settings.aws_client(page.service)
    try:
        description = page.describe(client, name)
    except ClientError as error:
        return 404, {"Content-Type": "text/plain"}, f"{page.title} {name}: {error.response['Error'].get('Message')}"
    description.pop("ResponseMetadata", None)
    body = [
        f"<h1>{html.escape(page.title)} {html.escape(name)}</h1>",
        f"<p>{_status(description)}</p>",
        "<h2>Description</h2>",
        f"<pre>{html.escape(json.dumps(description, indent=2, default=str))}</pre>",
    ]
    if page.log_group:
        body += ["<h2>Logs</h2>", _logs(page.log_group, name)]
    return 200, {"Content-Type": "text/html; charset=utf-8"}, _document(f"{page.title} {name}", body)


def _status(description: dict) -> str:
    for key, value in description.items():
        if key.endswith("Status") and isinstance(value, str):
            reason = description.get("FailureReason") or ""
            return f"<b>{html.escape(key)}</b>: {html.escape(value)} {html.escape(reason)}"
    return ""


def _logs(group: str, name: str) -> str:
    logs = settings.aws_client("logs")
    try:
        streams = logs.describe_log_streams(logGroupName=group, logStreamNamePrefix=f"{name}/")["logStreams"]
    except ClientError:
        return "<p>No logs yet.</p>"
    parts = []
    for stream in streams:
        events = logs.get_log_events(
            logGroupName=group, logStreamName=stream["logStreamName"], limit=LOG_LINES, startFromHead=False
        )["events"]
        text = "\n".join(event["message"] for event in events)
        parts.append(f"<h3>{html.escape(stream['logStreamName'])}</h3><pre>{html.escape(text)}</pre>")
    return "".join(parts) or "<p>No logs yet.</p>"


def _document(title: str, body: list[str]) -> str:
    style = (
        "body{font-family:sans-serif;margin:2em;max-width:80em}pre{background:#f4f4f4;padding:1em;"
        "overflow:auto;max-height:40em}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)} - mlscale emulator"
        f"</title><style>{style}</style></head><body>{''.join(body)}</body></html>"
    )


def install() -> None:
    from moto.moto_api._internal import urls

    urls.url_paths["{0}/moto-api/mlscale/(?P<kind>[a-z-]+)/(?P<name>.+)$"] = console_page
