"""`mlscale airflow` started for real (scheduler, triggerer, dag processor, API server, emulator), once per session."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO, free_port

DAG_ID = "mlscale_pipeline"
PRODUCER = "mlscale_raw_data"
TERMINAL_RUN_STATES = ("success", "failed")


@dataclass
class AirflowStack:
    url: str
    user: str
    password: str
    home: Path
    env: dict[str, str]
    emulator_url: str
    output: list[str] = field(default_factory=list)
    pid: int = 0  # `mlscale airflow`'s

    def kill_component(self, name: str) -> None:
        """SIGKILL one of Airflow's components (`triggerer`, `scheduler`), as the OOM killer would, and wait
        until `mlscale airflow` has started it again."""
        import psutil

        said = len(self.output)
        found = [p for p in psutil.Process(self.pid).children() if name in " ".join(p.cmdline())]
        assert len(found) == 1, [p.cmdline() for p in psutil.Process(self.pid).children()]
        found[0].send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 60
        while not any("starting it again" in line for line in self.output[said:]):
            assert time.monotonic() < deadline, "".join(self.output[-20:])
            time.sleep(0.5)
        while not any(
            name in " ".join(p.cmdline()) for p in psutil.Process(self.pid).children() if p.pid != found[0].pid
        ):
            assert time.monotonic() < deadline, "".join(self.output[-20:])
            time.sleep(0.5)

    def api(self) -> httpx.Client:
        token = (
            httpx.post(f"{self.url}/auth/token", json={"username": self.user, "password": self.password}, timeout=30)
            .raise_for_status()
            .json()["access_token"]
        )
        return httpx.Client(base_url=f"{self.url}/api/v2", headers={"Authorization": f"Bearer {token}"}, timeout=60)

    def airflow_cli(self, *args: str) -> str:
        """An `airflow` command against this stack's database, as a user types it."""
        result = subprocess.run(
            [sys.executable, "-m", "airflow", *args], env=self.env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
        return result.stdout

    def unpause(self, dag_id: str = DAG_ID) -> None:
        with self.api() as api:
            api.patch(f"/dags/{dag_id}", json={"is_paused": False}).raise_for_status()

    def trigger(self, dag_id: str, conf: dict, logical_date: str | None = None) -> str:
        """A manual run through the REST API (as the UI's Trigger button does); its run id."""
        with self.api() as api:
            body = api.post(
                f"/dags/{dag_id}/dagRuns",
                json={"logical_date": logical_date, "conf": conf},
            ).raise_for_status()
        return body.json()["dag_run_id"]

    def wait_for_runs(self, run_ids: list[str], timeout: float, dag_id: str = DAG_ID) -> dict[str, dict]:
        deadline = time.monotonic() + timeout
        while True:
            with self.api() as api:
                runs = {
                    r: api.get(f"/dags/{dag_id}/dagRuns/{urllib.parse.quote(r)}").raise_for_status().json()
                    for r in run_ids
                }
            if all(run["state"] in TERMINAL_RUN_STATES for run in runs.values()):
                return runs
            assert time.monotonic() < deadline, f"runs not finished after {timeout:.0f} s: " + ", ".join(
                f"{r}={run['state']}" for r, run in runs.items()
            )
            time.sleep(5)

    def runs(self, dag_id: str = DAG_ID, run_type: str | None = None) -> list[dict]:
        """The DAG's runs, oldest first (of one run type: manual, scheduled, backfill, asset_triggered)."""
        with self.api() as api:
            body = (
                api.get(
                    f"/dags/{dag_id}/dagRuns",
                    params={"run_type": run_type} if run_type else {},
                )
                .raise_for_status()
                .json()
            )
        return sorted(body["dag_runs"], key=lambda run: run["run_after"])

    def wait_for_a_run(self, dag_id: str, run_type: str, timeout: float, besides: set[str] = frozenset()) -> dict:
        """The first run of that type (other than the run ids `besides`), once it has been created."""
        deadline = time.monotonic() + timeout
        while not (found := [run for run in self.runs(dag_id, run_type) if run["dag_run_id"] not in besides]):
            assert time.monotonic() < deadline, f"no {run_type} run of {dag_id} after {timeout:.0f} s"
            time.sleep(2)
        return found[0]

    def task_states(self, run_id: str, dag_id: str = DAG_ID) -> dict[str, dict]:
        with self.api() as api:
            body = api.get(f"/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id)}/taskInstances").raise_for_status()
        return {ti["task_id"]: ti for ti in body.json()["task_instances"]}

    def wait_for_task_state(self, run_id: str, task_id: str, state: str, timeout: float, dag_id: str = DAG_ID) -> None:
        deadline = time.monotonic() + timeout
        while (now := self.task_states(run_id, dag_id).get(task_id, {}).get("state")) != state:
            assert now not in ("failed", "skipped", "upstream_failed"), self.failure_report([run_id], dag_id)
            assert time.monotonic() < deadline, f"{task_id} is {now}, not {state}"
            time.sleep(2)

    def wait_until_parked(self, run_id: str, task_id: str, dag_id: str, timeout: float = 120) -> None:
        """The scheduler has handled the executor's event for the try that parked in awaiting_input. On a scheduler
        without the fix for apache/airflow#72716 (mlscale_emulator.local_scheduler has it), answering before that fails
        the resumed try as a state mismatch; a person takes longer, and the tests answer as a person would."""
        wanted = f"TaskInstance Finished: dag_id={dag_id}, task_id={task_id}, run_id={run_id},"
        deadline = time.monotonic() + timeout
        while not any(
            wanted in line and "state=awaiting_input" in line
            for line in (self.home / "scheduler.log").read_text(errors="replace").splitlines()
        ):
            assert time.monotonic() < deadline, f"the scheduler never handled {task_id}'s parking"
            time.sleep(1)

    def run_minimal_to_the_gate(self, data_prefix: str) -> str:
        """A run of mlscale_minimal with gate_mode=manual, waiting for a person at its `approve` task; its id."""
        self.unpause("mlscale_minimal")
        run_id = self.trigger(
            "mlscale_minimal",
            {"data_prefix": data_prefix, "epochs": 3, "min_accuracy": 0.5, "gate_mode": "manual", "poll_interval": 2},
        )
        self.wait_for_task_state(run_id, "approve", "awaiting_input", timeout=600, dag_id="mlscale_minimal")
        self.wait_until_parked(run_id, "approve", "mlscale_minimal")
        return run_id

    def hitl_detail(self, run_id: str, task_id: str, dag_id: str = DAG_ID) -> dict:
        """A human-in-the-loop task's question, as the UI's Required Actions page reads it."""
        with self.api() as api:
            return (
                api.get(f"/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id)}/taskInstances/{task_id}/-1/hitlDetails")
                .raise_for_status()
                .json()
            )

    def answer_hitl(self, run_id: str, task_id: str, option: str, dag_id: str = DAG_ID) -> None:
        with self.api() as api:
            api.patch(
                f"/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id)}/taskInstances/{task_id}/-1/hitlDetails",
                json={"chosen_options": [option], "params_input": {}},
            ).raise_for_status()

    def xcom(self, run_id: str, task_id: str, dag_id: str = DAG_ID):
        with self.api() as api:
            response = api.get(
                f"/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id)}/taskInstances/{task_id}/xcomEntries/return_value",
                params={"deserialize": True, "stringify": False},
            )
        return response.raise_for_status().json()["value"]

    def extra_links(self, run_id: str, task_id: str) -> dict[str, str | None]:
        with self.api() as api:
            response = api.get(f"/dags/{DAG_ID}/dagRuns/{urllib.parse.quote(run_id)}/taskInstances/{task_id}/links")
        return response.raise_for_status().json()["extra_links"]

    def task_log(self, run_id: str, task_id: str, try_number: int = 1, dag_id: str = DAG_ID) -> str:
        path = self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
        return "\n".join(p.read_text(errors="replace") for p in sorted(path.glob(f"attempt={try_number}.log*")))

    def failure_report(self, run_ids: list[str], dag_id: str = DAG_ID) -> str:
        """The failed tasks' log tails, for an assertion message."""
        lines = []
        for run_id in run_ids:
            for task_id, ti in self.task_states(run_id, dag_id).items():
                if ti["state"] in ("failed", "upstream_failed"):
                    log = self.task_log(run_id, task_id, ti["try_number"], dag_id)[-3000:]
                    lines.append(f"--- {run_id} {task_id} {ti['state']}\n{log}")
        return "\n".join(lines)


def _start(tmp: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")}
    env.update(
        {
            "MLSCALE_HOME": str(tmp),
            "MLSCALE_EMULATOR_PORT": str(free_port()),
            "MLSCALE_REPO": str(REPO),
            # the worker-kill test waits this long for the dead worker's task to fail (mlscale airflow: 60 s)
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
            # and a SIGKILLed triggerer's triggers move to its replacement after 15 s, not 30
            "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "15",
        }
    )
    # Celery with two workers, as docker-compose.yaml runs Airflow, where Redis's server is installed (make test
    # installs Debian's); else the LocalExecutor
    executor = ["--executor", "celery", "--workers", "2"] if shutil.which("redis-server") else []
    process = subprocess.Popen(
        [sys.executable, "-m", "mlscale_emulator.cli", "airflow", "--port", str(port), *executor],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return process, port


@pytest.fixture(scope="session")
def airflow_stack(tmp_path_factory):
    """What a user gets from `make airflow`, in a private home."""
    tmp = tmp_path_factory.mktemp("airflow-stack")
    process, port = _start(tmp)
    output: list[str] = []
    ready = threading.Event()

    def pump():
        for line in process.stdout:
            output.append(line)
            if "The emulator answers at" in line:  # the last line it prints when ready
                ready.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        if not ready.wait(420):
            pytest.fail("mlscale airflow did not get ready:\n" + "".join(output)[-3000:])
        match = re.search(r"Airflow is ready: (\S+)\s+login: (\S+) / (\S+)", "".join(output))
        emulator = re.search(r"The emulator answers at (\S+)\.", "".join(output))
        home = tmp / "airflow"
        env = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")}
        env.update(
            {
                "AIRFLOW_HOME": str(home),
                "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            }
        )
        stack = AirflowStack(
            url=match.group(1),
            user=match.group(2),
            password=match.group(3),
            home=home,
            env=env,
            emulator_url=emulator.group(1),
            output=output,
            pid=process.pid,
        )
        assert match.group(1) == f"http://localhost:{port}"
        _wait_for_dag(stack, dag_ids=(DAG_ID, PRODUCER, "mlscale_minimal", "mlscale_submit_and_sense"))
        yield stack
    finally:  # also when the setup fails: a stack left running would outlive the tests
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(90)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="session")
def live_arrival(airflow_stack) -> dict:
    """New data as a new installation gets it: the producer unpaused, its latest daily run loads a week and
    announces it; the pipeline unpaused, so its watcher reads the announcement. The producer run, finished."""
    stack = airflow_stack
    stack.unpause(PRODUCER)
    live = stack.wait_for_a_run(PRODUCER, "scheduled", timeout=120)["dag_run_id"]
    run = stack.wait_for_runs([live], timeout=300, dag_id=PRODUCER)[live]
    assert run["state"] == "success", stack.failure_report([live], PRODUCER)
    stack.unpause(DAG_ID)
    return {"run_id": live, **stack.xcom(live, "write_partitions", PRODUCER)}


@pytest.fixture(scope="session")
def data_prefix(airflow_stack) -> str:
    """The digits data (train/, test/, eval/ CSVs) for the small example DAGs."""
    from mlscale_example.datasets.digits import stage_digits

    s3 = emulator_client(airflow_stack, "s3")
    s3.create_bucket(Bucket="mlscale-demo")
    stage_digits(s3, "mlscale-demo", "mlscale/small-dags/data", eval_csv=True)
    return "s3://mlscale-demo/mlscale/small-dags/data/"


def _wait_for_dag(stack: AirflowStack, timeout: float = 180, dag_ids: tuple[str, ...] = (DAG_ID,)) -> None:
    """The dag processor has parsed and serialized the DAGs (a backfill or a trigger needs them)."""
    deadline = time.monotonic() + timeout
    with stack.api() as api:
        for dag_id in dag_ids:
            while api.get(f"/dags/{dag_id}").status_code != 200:
                assert time.monotonic() < deadline, f"{dag_id} not parsed after {timeout:.0f} s"
                time.sleep(2)


def emulator_client(stack: AirflowStack, service: str):
    import boto3

    return boto3.client(
        service,
        endpoint_url=stack.emulator_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def dump(value) -> str:
    return json.dumps(value, indent=1, default=str)[:3000]
