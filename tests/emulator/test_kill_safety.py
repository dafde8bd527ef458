"""A SIGKILL of the emulator or of `mlscale airflow` leaves nothing running past their next start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import boto3
import pytest

from tests.conftest import free_port, training_request, upload_source

pytestmark = pytest.mark.emulator


def alive(pid: int) -> bool:
    from mlscale_emulator import sessions

    return sessions.start_time(pid) is not None


def wait_until(condition, seconds: float = 60, what: str = "") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out: {what}"
        time.sleep(0.1)


def test_the_next_emulator_ends_the_jobs_a_killed_one_left(tmp_path_factory, tmp_path):
    from mlscale_emulator import control
    from mlscale_emulator.settings import EmulatorSettings

    config = EmulatorSettings(host="127.0.0.1", port=free_port(), home=tmp_path_factory.mktemp("killed-home"))
    server = control.up(config)
    try:
        client = boto3.client("s3", endpoint_url=config.endpoint_url, region_name="us-east-1")
        client.create_bucket(Bucket="mlscale-test")
        pid_file = tmp_path / "job.pid"
        script = f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n"
        source = upload_source(client, {"train.py": script}, "code/quiet/sourcedir.tar.gz")
        sagemaker = boto3.client("sagemaker", endpoint_url=config.endpoint_url, region_name="us-east-1")
        sagemaker.create_training_job(**training_request("quiet", source))
        wait_until(lambda: pid_file.exists() and pid_file.read_text(), what="the job to start")
        job = int(pid_file.read_text())

        os.kill(server, signal.SIGKILL)
        wait_until(lambda: not alive(server), what="the server to die")
        assert alive(job)  # the quiet job outlived its emulator, as the probe found

        server = control.up(config)  # the same home: the new server ends what the killed one left
        wait_until(lambda: not alive(job), seconds=30, what="the leftover job to be ended")
        assert not (config.home / "sessions").exists() or not list((config.home / "sessions").iterdir())
    finally:
        control.down(config)


def test_the_next_mlscale_airflow_ends_what_a_killed_one_left(tmp_path, capsys):
    from mlscale_emulator import local_airflow, sessions
    from mlscale_emulator.settings import EmulatorSettings

    run_file = tmp_path / "airflow" / local_airflow.RUN_FILE
    config = EmulatorSettings(host="127.0.0.1", port=free_port(), home=tmp_path / "emulator")
    # a "previous stack": a component in a session of its own, recorded; the stack's own process, now dead
    component = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    sessions.record(tmp_path / "airflow" / "sessions", component.pid)
    stack = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    stack_started = sessions.start_time(stack.pid)
    run_file.write_text(f'{{"pid": {stack.pid}, "started": {stack_started}, "emulator_started": false}}')

    with pytest.raises(RuntimeError, match=f"mlscale airflow already runs .* \\(pid {stack.pid}\\)"):
        local_airflow.claim_stack(run_file, tmp_path / "postgres", config)
    assert component.poll() is None  # a running stack is refused, never stopped under it

    stack.kill()
    stack.wait()
    local_airflow.claim_stack(run_file, tmp_path / "postgres", config)
    assert component.wait(timeout=10) is not None
    said = capsys.readouterr().out
    assert f"A previous mlscale airflow (pid {stack.pid}) was killed" in said and str(component.pid) in said
    assert not run_file.exists() and not sessions.leftovers(tmp_path / "airflow" / "sessions")


def test_a_component_dies_with_the_stack_that_started_it(tmp_path):
    """PR_SET_PDEATHSIG: SIGKILL of `mlscale airflow` reaches its components at once."""
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import subprocess, sys, time\n"
                "from mlscale_emulator import sessions\n"
                "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],"
                " start_new_session=True, preexec_fn=sessions.dies_with_parent())\n"
                f"open({str(tmp_path / 'child')!r}, 'w').write(str(child.pid))\n"
                "time.sleep(600)\n"
            ),
        ]
    )
    wait_until(lambda: (tmp_path / "child").exists() and (tmp_path / "child").read_text(), what="the child")
    child = int((tmp_path / "child").read_text())
    parent.kill()
    parent.wait()
    wait_until(lambda: not alive(child), seconds=10, what="the child to die with its parent")
