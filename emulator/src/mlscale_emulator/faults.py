"""Fault switches: what AWS may do to a job at any moment, on request, so a test or a person chooses when.

POST /moto-api/mlscale-faults/spot-interruption/<training job name>[?region=us-east-1] reclaims a
Managed Spot training job's instances now (mlscale_emulator.executors.spot): 200 once it is under way,
404 for an unknown job, 409 when the job is not running or is not a Spot job.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs, unquote, urlparse

from moto.sagemaker import models as sm_models

from mlscale_emulator import settings


def _answer(status: int, body: dict) -> tuple[int, dict, str]:
    return status, {"Content-Type": "application/json"}, json.dumps(body)


def spot_interruption(request, full_url, headers):
    from mlscale_emulator.sagemaker import training

    if request.method != "POST":
        return _answer(405, {"message": "POST to interrupt the job"})
    url = urlparse(full_url)
    name = unquote(url.path.rstrip("/").rsplit("/", 1)[-1])
    region = (parse_qs(url.query).get("region") or ["us-east-1"])[0]
    job = sm_models.sagemaker_backends[settings.ACCOUNT_ID][region].training_jobs.get(name)
    if job is None:
        return _answer(404, {"message": f"Training job {name} not found in {region}"})
    run = training.PATCH.runs.get(job.arn)
    if run is None or job.training_job_status != "InProgress":
        return _answer(409, {"message": f"Training job {name} is {job.training_job_status}, not running"})
    try:
        run.spot.interrupt()
    except ValueError as error:
        return _answer(409, {"message": str(error)})
    return _answer(200, {"interrupted": name})


def install() -> None:
    from moto.moto_api._internal import urls

    urls.url_paths["{0}/moto-api/mlscale-faults/spot-interruption/(?P<name>[^/]+)$"] = spot_interruption
