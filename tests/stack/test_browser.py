"""New data starts the pipeline; a person in Debian's chromium signs in, inspects that run in the run view,
triggers the producer from its params form, and approves a model waiting at the gate (gate_mode=manual).

Screenshots are kept in test-artifacts/browser/ (MLSCALE_ARTIFACTS overrides), one per step: the run new data
started, the mlscale tab, the run view, the emulator's page behind the train task's link, the filled form, the
producer's run, the approval's Required Actions page and the approved run.
"""

from __future__ import annotations

import os
import shutil
import urllib.parse
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO
from tests.stack.conftest import DAG_ID, PRODUCER, emulator_client

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHOTS = Path(os.environ.get("MLSCALE_ARTIFACTS", REPO / "test-artifacts")) / "browser"
# As Debian's chromium runs on a machine with no internet: no sandbox (root), no calls home.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Two more days of history, announced to nobody (a second pipeline run is not what this test is about)
FORM = {"records_per_day": "300", "days": "9"}

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it as root)"),
]


@pytest.fixture
def page():
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser.new_page(viewport={"width": 1440, "height": 1000})
        browser.close()


def shot(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def sign_in(page, stack) -> None:
    page.goto(stack.url)
    page.get_by_label("Username").fill(stack.user)
    page.get_by_label("Password").fill(stack.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{stack.url}/")


def trigger_from_form(page, stack) -> None:
    page.goto(f"{stack.url}/dags/{PRODUCER}")
    page.get_by_role("button", name="Trigger").first.click()
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    for name, value in FORM.items():
        dialog.locator(f"input[name=element_{name}]").fill(value)
    dialog.locator("label:has(input[name=element_announce])").click()  # the switch: off
    shot(page, "05-trigger-form")
    dialog.get_by_role("button", name="Trigger", exact=True).click()
    dialog.wait_for(state="hidden")


def test_new_data_starts_exactly_one_run(airflow_stack, live_arrival, page):
    """The producer's live run announced a week (S3 event -> SQS -> the asset watcher): one pipeline run trains on
    the week ending with the newest day it wrote, and deploys (its params are the DAG's defaults)."""
    stack = airflow_stack
    run_id = stack.wait_for_a_run(DAG_ID, "asset_triggered", timeout=300)["dag_run_id"]
    finished = stack.wait_for_runs([run_id], timeout=900)[run_id]
    assert finished["state"] == "success", stack.failure_report([run_id])
    assert len(stack.runs(DAG_ID, "asset_triggered")) == 1
    plan = stack.xcom(run_id, "plan_run")
    written = live_arrival["written"]  # a week, the newest day named by the notice's key
    assert len(written) == 7 and plan["arrived"] == [written[-1]]
    assert (plan["window_start"], plan["window_end"]) == (written[0], _day_after(written[-1]))
    states = {task: ti["state"] for task, ti in stack.task_states(run_id).items()}
    assert states["wait_for_data"] == "success"
    assert states["deploy_endpoint"] == "success" and states["deploy_edge"] == "success"
    sign_in(page, stack)
    page.goto(f"{stack.url}/dags/{DAG_ID}/runs/{urllib.parse.quote(run_id)}")
    page.wait_for_load_state("networkidle")
    shot(page, "00-run-started-by-new-data")
    page.goto(f"{stack.url}/dags/{PRODUCER}")
    page.wait_for_load_state("networkidle")
    shot(page, "00-producer")


def _day_after(day: str) -> str:
    from datetime import date, timedelta

    return (date.fromisoformat(day) + timedelta(days=1)).isoformat()


def test_the_run_view_of_the_run_new_data_started(airflow_stack, live_arrival, page):
    stack = airflow_stack
    run_id = stack.wait_for_a_run(DAG_ID, "asset_triggered", timeout=300)["dag_run_id"]
    assert stack.wait_for_runs([run_id], timeout=900)[run_id]["state"] == "success", stack.failure_report([run_id])
    sign_in(page, stack)
    page.goto(f"{stack.url}/dags/{DAG_ID}/runs/{urllib.parse.quote(run_id)}")
    page.wait_for_load_state("networkidle")
    page.get_by_role("link", name="mlscale", exact=True).click()  # the plugin's tab on the run page
    view = page.frame_locator("iframe").first
    view.get_by_text("Lineage").first.wait_for(timeout=60_000)
    frame = next(f for f in page.frames if "/mlscale/run" in f.url)
    frame.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")  # the plots
    shot(page, "02-run-view-tab")

    # the run view itself, full length: every plot loaded and the lineage names each resource
    view_url = f"{stack.url}/mlscale/run?dag_id={DAG_ID}&run_id={urllib.parse.quote(run_id)}"
    page.goto(view_url)
    page.wait_for_load_state("networkidle")
    shot(page, "03-run-view")
    broken = page.evaluate("[...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
    assert broken == []
    assert page.locator("img").count() >= 2  # quality plots and the confusion matrix
    assert page.locator("svg").count() >= 1  # training curves
    text = page.inner_text("body")
    train = stack.xcom(run_id, "train")
    evaluation = stack.xcom(run_id, "evaluate")
    endpoint = stack.xcom(run_id, "deploy_endpoint")
    for resource in (train["job_name"], evaluation["model_package_arn"], endpoint["endpoint_name"]):
        assert resource in text, resource

    # the view asks Airflow who is asking: the browser's session cookie passed; no credentials, no page
    assert httpx.get(view_url, timeout=60).status_code == 401

    # the train task's extra link (its Links in the UI) opens the emulator's own page for the job
    link = stack.extra_links(run_id, "train")["SageMaker training job"]
    assert link == f"{stack.emulator_url}/moto-api/mlscale/training-jobs/{train['job_name']}"
    page.goto(link)
    shot(page, "04-emulator-training-job")
    assert "TrainingJobStatus: Completed" in page.inner_text("body")
    assert "epoch=4 train_loss=" in page.inner_text("body")  # the DAG's default epochs


def test_trigger_the_producer_from_its_form(airflow_stack, live_arrival, page):
    stack = airflow_stack
    sign_in(page, stack)
    earlier = {run["dag_run_id"] for run in stack.runs(PRODUCER, "manual")}  # the backfill test's history load
    trigger_from_form(page, stack)
    run = stack.wait_for_a_run(PRODUCER, "manual", timeout=60, besides=earlier)
    # the form's values reached the run, the switch included
    assert run["conf"] == {"records_per_day": 300, "days": 9, "announce": False}, run["conf"]
    finished = stack.wait_for_runs([run["dag_run_id"]], timeout=300, dag_id=PRODUCER)[run["dag_run_id"]]
    assert finished["state"] == "success", stack.failure_report([run["dag_run_id"]], PRODUCER)
    page.goto(f"{stack.url}/dags/{PRODUCER}/runs/{urllib.parse.quote(run['dag_run_id'])}")
    page.wait_for_load_state("networkidle")
    shot(page, "06-producer-run")
    produced = stack.xcom(run["dag_run_id"], "write_partitions", PRODUCER)
    assert len(produced["written"]) == 2 and produced["notice"] is None  # the two days before the live week
    s3 = emulator_client(stack, "s3")
    notices = s3.list_objects_v2(Bucket="mlscale-demo", Prefix="mlscale/raw/_arrivals/")["Contents"]
    assert len(notices) == 1  # still only the live run's: no second pipeline run is coming


def test_a_person_approves_the_model_in_the_ui_and_it_is_deployed(airflow_stack, data_prefix, page):
    """gate_mode=manual: the approve task waits on its Required Actions page; a person presses Approve; the
    package becomes Approved and the deploy task runs."""
    stack, dag_id = airflow_stack, "mlscale_minimal"
    run_id = stack.run_minimal_to_the_gate(data_prefix)
    arn = stack.xcom(run_id, "evaluate", dag_id)["model_package_arn"]
    sagemaker = emulator_client(stack, "sagemaker")
    assert sagemaker.describe_model_package(ModelPackageName=arn)["ModelApprovalStatus"] == "PendingManualApproval"

    sign_in(page, stack)
    page.goto(f"{stack.url}/dags/{dag_id}/runs/{urllib.parse.quote(run_id)}/tasks/approve/required_actions")
    approve = page.get_by_role("button", name="Approve")
    approve.wait_for()
    shot(page, "07-required-action")
    approve.click()
    finished = stack.wait_for_runs([run_id], timeout=300, dag_id=dag_id)[run_id]
    assert finished["state"] == "success", stack.failure_report([run_id], dag_id)
    states = {task: ti["state"] for task, ti in stack.task_states(run_id, dag_id).items()}
    assert states["approve"] == "success" and states["deploy"] == "success", states
    assert stack.xcom(run_id, "approve", dag_id)["decision"] == "Approved"
    described = sagemaker.describe_model_package(ModelPackageName=arn)
    assert described["ModelApprovalStatus"] == "Approved" and described["ApprovalDescription"].startswith(
        "Approved by "
    )
    page.goto(f"{stack.url}/dags/{dag_id}/runs/{urllib.parse.quote(run_id)}")
    page.wait_for_load_state("networkidle")
    shot(page, "08-approved-run")
