"""New data starts the pipeline; then a person in Debian's chromium signs in, sees that run, triggers another
from the params form, watches it finish and opens the run view.

Screenshots are kept in test-artifacts/browser/ (MLSCALE_ARTIFACTS overrides), one per step: the run new data
started, the filled form, the run in progress and finished, the mlscale tab, the run view, and the emulator's
page behind the train task's link.
"""

from __future__ import annotations

import os
import shutil
import time
import urllib.parse
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO
from tests.stack.conftest import DAG_ID, PRODUCER

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHOTS = Path(os.environ.get("MLSCALE_ARTIFACTS", REPO / "test-artifacts")) / "browser"
# As Debian's chromium runs on a machine with no internet: no sandbox (root), no calls home.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]  # fmt: skip
# champion_tolerance 1: the run new data started (more epochs and instances) is the champion to beat;
# bake_seconds 0: that run created the endpoint, and this run's update need not bake for 5 minutes
FORM = {"epochs": "2", "instance_count": "1", "min_accuracy": "0.5", "champion_tolerance": "1", "bake_seconds": "0"}

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
    page.goto(f"{stack.url}/dags/{DAG_ID}")
    page.get_by_role("button", name="Trigger").first.click()
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    for name, value in FORM.items():
        dialog.locator(f"input[name=element_{name}]").fill(value)
    dialog.locator("input[name=element_deploy_target]").locator("xpath=..").get_by_role("combobox").click()
    page.get_by_role("option", name="endpoint", exact=True).click()
    shot(page, "01-trigger-form")
    dialog.get_by_role("button", name="Trigger", exact=True).click()
    dialog.wait_for(state="hidden")


def manual_run(stack, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        with stack.api() as api:
            runs = api.get(f"/dags/{DAG_ID}/dagRuns", params={"run_type": "manual"}).raise_for_status().json()
        if runs["dag_runs"]:
            return runs["dag_runs"][0]
        assert time.monotonic() < deadline, "the trigger form created no run"
        time.sleep(1)


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


def test_trigger_from_the_form_then_inspect_the_run_in_the_run_view(airflow_stack, live_arrival, page):
    stack = airflow_stack
    sign_in(page, stack)
    trigger_from_form(page, stack)
    run = manual_run(stack)
    # the form's values reached the run, the ones left alone kept their defaults
    assert run["conf"]["epochs"] == 2
    assert run["conf"]["instance_count"] == 1 and run["conf"]["deploy_target"] == "endpoint"
    assert run["conf"]["storage"] == "auto"
    run_id = run["dag_run_id"]
    run_page = f"{stack.url}/dags/{DAG_ID}/runs/{urllib.parse.quote(run_id)}"
    page.goto(run_page)
    page.wait_for_load_state("networkidle")
    shot(page, "02-run-in-progress")

    finished = stack.wait_for_runs([run_id], timeout=900)[run_id]
    assert finished["state"] == "success", stack.failure_report([run_id])
    states = {task: ti["state"] for task, ti in stack.task_states(run_id).items()}
    assert states["deploy_endpoint"] == "success" and states["deploy_edge"] == "skipped"

    page.goto(run_page)
    page.wait_for_load_state("networkidle")
    shot(page, "03-run-finished")
    page.get_by_role("link", name="mlscale", exact=True).click()  # the plugin's tab on the run page
    view = page.frame_locator("iframe").first
    view.get_by_text("Lineage").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)  # images inside the frame
    shot(page, "04-run-view-tab")

    # the run view itself, full length: every plot loaded and the lineage names each resource
    page.goto(f"{stack.url}/mlscale/run?dag_id={DAG_ID}&run_id={urllib.parse.quote(run_id)}")
    page.wait_for_load_state("networkidle")
    shot(page, "05-run-view")
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
    view_url = f"{stack.url}/mlscale/run?dag_id={DAG_ID}&run_id={urllib.parse.quote(run_id)}"
    assert httpx.get(view_url, timeout=60).status_code == 401

    # the train task's extra link (its Links in the UI) opens the emulator's own page for the job
    link = stack.extra_links(run_id, "train")["SageMaker training job"]
    assert link == f"{stack.emulator_url}/moto-api/mlscale/training-jobs/{train['job_name']}"
    page.goto(link)
    shot(page, "06-emulator-training-job")
    assert "TrainingJobStatus: Completed" in page.inner_text("body")
    assert "epoch=2 train_loss=" in page.inner_text("body")
