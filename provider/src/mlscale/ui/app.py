"""The FastAPI app behind the run view: the page, and the run's own S3 artifacts (plots, reports)."""

from __future__ import annotations

from urllib.parse import urlencode

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import requires_access_dag
from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse, Response

CONTENT_TYPES = {".png": "image/png", ".html": "text/html", ".json": "application/json"}

# Who may look: whoever Airflow's auth manager lets read the DAG's runs, signed in as for the UI (the session
# cookie, which the iframe of the run page sends, or a bearer token). Plugin apps are not guarded by default.
can_read_runs = requires_access_dag("GET", DagAccessEntity.RUN)

# No /docs, /redoc or /openapi.json: FastAPI serves them outside the app's dependencies, so without auth.
app = FastAPI(
    title="mlscale run view", dependencies=[Depends(can_read_runs)], docs_url=None, redoc_url=None, openapi_url=None
)


def known_connection(conn_id: str = Query("aws_default")) -> str:
    """The connection the view reads S3 and logs with; an unknown one is the caller's error (404), not a 500."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise HTTPException(404, f"no Airflow connection {conn_id!r}") from None
    return conn_id


def run_loader():
    from mlscale.ui.run_record import load_run

    return load_run


def s3_reader():
    def read(uri: str, conn_id: str) -> bytes:
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook

        hook = S3Hook(aws_conn_id=conn_id)
        bucket, key = hook.parse_s3_url(uri)
        return hook.get_key(key, bucket_name=bucket).get()["Body"].read()

    return read


def log_reader():
    from mlscale.ui.curves import training_log

    return training_log


@app.get("/run", response_class=HTMLResponse)
def run_page(
    dag_id: str = Query(...),
    run_id: str = Query(...),
    conn_id: str = Depends(known_connection),
    load=Depends(run_loader),
    read_log=Depends(log_reader),
) -> str:
    from mlscale.ui.curves import metric_series
    from mlscale.ui.page import render

    record = load(dag_id, run_id)
    if record is None:
        raise HTTPException(404, f"no run {run_id} of {dag_id}")
    job = record.stage("training").get("job_name")
    if job:
        try:
            record.curves = metric_series(*read_log(job, conn_id))
        except Exception as error:  # noqa: BLE001 - the page still shows the rest, and says why
            record.curves_error = f"training curves unavailable: {error}"

    def artifact(uri: str | None) -> str:
        return "artifact?" + urlencode({"dag_id": dag_id, "run_id": run_id, "uri": uri or "", "conn_id": conn_id})

    return render(record, artifact)


@app.get("/artifact")
def run_artifact(
    dag_id: str = Query(...),
    run_id: str = Query(...),
    uri: str = Query(...),
    conn_id: str = Depends(known_connection),
    load=Depends(run_loader),
    read=Depends(s3_reader),
) -> Response:
    record = load(dag_id, run_id)
    if record is None:
        raise HTTPException(404, f"no run {run_id} of {dag_id}")
    suffix = "." + uri.rsplit(".", 1)[-1] if "." in uri else ""
    # only what this run produced, and only documents a browser can show safely
    if uri not in record.s3_uris() or suffix not in CONTENT_TYPES:
        raise HTTPException(403, "not an artifact of this run")
    return Response(read(uri, conn_id), media_type=CONTENT_TYPES[suffix])
