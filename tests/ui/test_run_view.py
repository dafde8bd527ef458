"""The run view's FastAPI app, through its test client, on a recorded run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from mlscale.ui.app import app, can_read_runs, known_connection, log_reader, run_loader, s3_reader
from mlscale.ui.run_record import RunRecord, TaskRow

T0 = datetime(2026, 12, 1, tzinfo=UTC)
XCOMS = {
    "stage_raw_data": {"etl_prefix": "s3://demo/mlscale/etl/run-1/"},
    "quality": {
        "verdict": "passed",
        "data_prefix": "s3://demo/mlscale/etl/run-1/",
        "report_uri": "s3://demo/q/report.html",
        "checks": ["row_count passed: 70000"],
        "plots": ["s3://demo/q/label_balance.png"],
    },
    "shard": {"outputs": {"shards": "s3://demo/runs/1/shards/train/"}},
    "train": {
        "job_name": "job-1",
        "model_artifact": "s3://demo/models/job-1/output/model.tar.gz",
        "instance_count": 2,
        "fingerprint": "ab12cd34ef56" + "0" * 52,
        "cache": {"hit": True, "enabled": True, "reused": "job-1", "from_run": "manual__0"},
        "instance_type": "ml.c5.xlarge",
        "final_metrics": {"test:accuracy": 0.99},
        "billable_seconds": 20,
    },
    "diagnose": {
        "verdict": "under-utilised",
        "reasons": ["CPU p95 15% < 70%"],
        "recommendation": {
            "step": "batch-size",
            "instance_count": 2,
            "instance_type": "ml.c5.xlarge",
            "changes": ["double the batch size"],
        },
    },
    "evaluate": {
        "decision": "Approved",
        "reasons": ["accuracy 0.99 meets 0.9"],
        "model_package_arn": "arn:pkg/1",
        "metrics": {"accuracy": 0.99, "macro_f1": 0.99, "samples": 7000},
        "confusion_matrix_uri": "s3://demo/eval/confusion_matrix.png",
    },
    "compile": {
        "compiled_artifact": "s3://demo/compiled/model-ml_c5.tar.gz",
        "fingerprint": "ff" * 32,
        "cache": {"hit": False, "enabled": True},
    },
    "deploy_endpoint": {"endpoint_name": "mlscale-digits", "sample_answer": "[[9.1, 0.2]]"},
    "deploy_edge": {"deployment_id": "dep-1", "devices": {"device-1": {"status": "SUCCEEDED", "answer": "0"}}},
}
OPERATORS = {
    "quality": "DataQualityOperator",
    "shard": "SageMakerProcessingScriptOperator",
    "train": "SageMakerScriptTrainingOperator",
    "diagnose": "TrainingDiagnosisOperator",
    "evaluate": "SageMakerBatchEvaluationOperator",
    "compile": "SageMakerNeoCompilationOperator",
    "deploy_endpoint": "SageMakerEndpointDeployOperator",
    "deploy_edge": "GreengrassEdgeDeployOperator",
}
RECORD = RunRecord(
    "mlscale_pipeline",
    "manual__1",
    "success",
    [
        TaskRow("stage_raw_data", "success", T0, T0 + timedelta(seconds=2), "_PythonDecoratedOperator"),
        TaskRow("train", "success", T0 + timedelta(seconds=10), T0 + timedelta(seconds=40), OPERATORS["train"]),
        TaskRow(
            "deploy_edge", "failed", T0 + timedelta(seconds=41), T0 + timedelta(seconds=50), OPERATORS["deploy_edge"]
        ),
    ]
    + [
        TaskRow(task, "success", None, None, name)
        for task, name in OPERATORS.items()
        if task not in ("train", "deploy_edge")
    ],
    XCOMS,
)


def client() -> TestClient:
    app.dependency_overrides[can_read_runs] = lambda: None  # signed in, may read the DAG's runs
    app.dependency_overrides[known_connection] = lambda: "aws_default"
    app.dependency_overrides[run_loader] = lambda: lambda dag, run: RECORD if run == "manual__1" else None
    app.dependency_overrides[s3_reader] = lambda: lambda uri, conn: b"\x89PNG fake " + uri.encode()
    lines = [f"epoch={e} train_loss={1 / e:.4f} test_accuracy={0.9 + e / 100:.4f}" for e in range(1, 5)]
    app.dependency_overrides[log_reader] = lambda: (
        lambda job, conn: (lines, {"train:loss": r"train_loss=([0-9.]+)", "test:accuracy": r"test_accuracy=([0-9.]+)"})
    )
    return TestClient(app)


def test_the_page_shows_timeline_plots_and_lineage():
    page = client().get("/run", params={"dag_id": "mlscale_pipeline", "run_id": "manual__1"})
    assert page.status_code == 200
    text = page.text
    assert "stage_raw_data" in text and "30.0 s" in text and "class='failed'" in text  # timeline with states
    assert "Data quality: passed" in text and "label_balance.png" in text
    # the stage cache: train reused an earlier run's job, compile ran and was recorded; both show fingerprints
    assert "reused job-1 from run manual__0" in text and "(ab12cd34ef56)" in text
    assert "ran; recorded" in text and "(ffffffffffff)" in text
    assert "Diagnosis: under-utilised" in text and "batch-size" in text
    assert "Evaluation: gate Approved" in text and "confusion_matrix.png" in text
    lineage = text[text.index("class='lineage'") :]
    order = ["s3://demo/mlscale/etl/run-1/", "job-1", "arn:pkg/1", "model-ml_c5.tar.gz", "mlscale-digits", "dep-1"]
    assert [lineage.index(item) for item in order] == sorted(lineage.index(item) for item in order)
    assert "device-1: SUCCEEDED, answer 0" in text
    # training curves from the job's log: one point per epoch
    assert "Training curves" in text and "test:accuracy: 0.91 -&gt; 0.94 over 4 points" in text and "<polyline" in text


def test_artifacts_of_the_run_are_served_and_nothing_else():
    http = client()
    ok = http.get(
        "/artifact",
        params={"dag_id": "mlscale_pipeline", "run_id": "manual__1", "uri": "s3://demo/eval/confusion_matrix.png"},
    )
    assert ok.status_code == 200 and ok.headers["content-type"] == "image/png" and ok.content.startswith(b"\x89PNG")
    other = http.get(
        "/artifact", params={"dag_id": "mlscale_pipeline", "run_id": "manual__1", "uri": "s3://demo/secrets/keys.png"}
    )
    assert other.status_code == 403
    model = http.get(
        "/artifact",
        params={
            "dag_id": "mlscale_pipeline",
            "run_id": "manual__1",
            "uri": "s3://demo/models/job-1/output/model.tar.gz",
        },
    )
    assert model.status_code == 403  # in the run, but not something a browser shows


def test_unknown_run_is_404():
    assert client().get("/run", params={"dag_id": "mlscale_pipeline", "run_id": "nope"}).status_code == 404


def test_the_plugin_mounts_the_app_and_adds_a_dag_run_tab():
    from mlscale.plugin import MlscalePlugin

    assert MlscalePlugin.fastapi_apps[0]["url_prefix"] == "/mlscale"
    view = MlscalePlugin.external_views[0]
    assert view["destination"] == "dag_run" and "{DAG_ID}" in view["href"] and "{RUN_ID}" in view["href"]


def test_the_mounted_app_loads_the_view_on_its_first_request():
    """The plugin mounts a lazy ASGI app: FastAPI is imported in the API server only, when first used."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from mlscale.plugin import MlscalePlugin

    client()  # installs the fake loader on the real app
    outer = Starlette(routes=[Mount("/mlscale", app=MlscalePlugin.fastapi_apps[0]["app"])])
    page = TestClient(outer).get("/mlscale/run", params={"dag_id": "mlscale_pipeline", "run_id": "manual__1"})
    assert page.status_code == 200 and "Evaluation: gate Approved" in page.text


def test_metric_series_follow_the_metric_definitions():
    from mlscale.ui.curves import metric_series

    lines = ["epoch=1 loss=0.5", "noise", "epoch=2 loss=0.25", "loss=bad"]
    assert metric_series(lines, {"loss": r"loss=([0-9.]+)", "acc": r"acc=([0-9.]+)"}) == {"loss": [0.5, 0.25]}


def test_nobody_signed_out_sees_a_run():
    client()
    del app.dependency_overrides[can_read_runs]
    try:
        for path in ("/run", "/artifact"):
            response = TestClient(app).get(
                path, params={"dag_id": "mlscale_pipeline", "run_id": "manual__1", "uri": "s3://b/k.png"}
            )
            assert response.status_code == 401, path
    finally:
        app.dependency_overrides[can_read_runs] = lambda: None


def test_results_are_found_by_stage_kind_in_any_dag():
    """A DAG of one's own, with task ids of its own: the view still finds the training and the endpoint."""
    from mlscale.ui.page import render

    record = RunRecord(
        "my_dag",
        "manual__2",
        "success",
        [
            TaskRow("submit", "success", T0, T0, "SageMakerScriptTrainingOperator"),
            TaskRow("wait", "success", T0, T0, "TrainingJobSensor"),
            TaskRow("serve", "success", T0, T0, "SageMakerEndpointDeployOperator"),
        ],
        {
            "submit": {"job_name": "job-9", "status": "InProgress"},
            "wait": {"job_name": "job-9", "status": "Completed", "final_metrics": {"test:accuracy": 0.97}},
            "serve": {"endpoint_name": "my-endpoint", "sample_answer": "[[1]]"},
        },
    )
    assert record.stage("training")["final_metrics"] == {"test:accuracy": 0.97}  # the sensor completes the submit
    page = render(record, lambda uri: uri)
    assert "Training: job-9" in page and "test:accuracy" in page and "endpoint my-endpoint" in page
    other = render(
        RunRecord(
            "etl_only", "r", "success", [TaskRow("load", "success", T0, T0, "BashOperator")], {"load": {"rows": 1}}
        ),
        lambda uri: uri,
    )
    assert "no mlscale stages" in other


def test_an_unknown_connection_is_404_and_the_api_docs_are_not_served(monkeypatch):
    http = client()
    del app.dependency_overrides[known_connection]
    try:
        monkeypatch.setenv("AIRFLOW_CONN_KNOWN_ONE", "aws://")
        assert (
            http.get(
                "/run", params={"dag_id": "mlscale_pipeline", "run_id": "manual__1", "conn_id": "known_one"}
            ).status_code
            == 200
        )
        unknown = http.get("/run", params={"dag_id": "mlscale_pipeline", "run_id": "manual__1", "conn_id": "nope"})
        assert unknown.status_code == 404 and "no Airflow connection 'nope'" in unknown.text
    finally:
        app.dependency_overrides[known_connection] = lambda: "aws_default"
    for path in ("/docs", "/redoc", "/openapi.json"):
        assert http.get(path).status_code == 404, path


def test_the_lineage_is_drawn_from_the_facts_each_stage_reports_to_openlineage():
    from mlscale.ui.page import lineage

    facts = {
        "etl": {
            "inputs": [{"namespace": "awsathena://athena.us-east-1.amazonaws.com", "name": "awsdatacatalog.db.raw"}],
            "outputs": [{"namespace": "s3://demo", "name": "etl/run-1"}],
        },
        "train": {
            "inputs": [{"namespace": "s3://demo", "name": "shards"}],
            "outputs": [{"namespace": "s3://demo", "name": "models/job-1/output/model.tar.gz"}],
        },
        "evaluate": {
            "inputs": [],
            "outputs": [{"namespace": "arn:aws:sagemaker:us-east-1:123456789012", "name": "model-package/digits/1"}],
        },
    }
    tasks = [
        TaskRow(t, "success", T0 + timedelta(seconds=i), T0 + timedelta(seconds=i + 1)) for i, t in enumerate(facts)
    ]
    html = lineage(RunRecord("d", "r", "success", tasks, {t: {"lineage": f} for t, f in facts.items()}))
    order = [
        "awsdatacatalog.db.raw",
        "s3://demo/etl/run-1",
        "models/job-1/output/model.tar.gz",
        "arn:aws:sagemaker:us-east-1:123456789012:model-package/digits/1",
    ]
    assert [html.index(item) for item in order] == sorted(html.index(item) for item in order)
