"""The SageMaker Python SDKs, each in a virtual environment of its own, and the user code run in them.

The SDKs pin what Airflow 3.3 cannot share a venv with (v2: attrs<26, protobuf<7, packaging<25; v3:
protobuf<7, mock<5, MLflow), so the tests run users' SDK code in its own interpreter, as a data scientist's
notebook would, against the session's emulator. When the session collects an SDK test, its venv is built in
the background (once: reused while its pins are unchanged; uv takes seconds). The first SDK test starts every
collected SDK's client script at once, and each test reads what its script printed. (Run from the session's
start instead, the scripts' jobs and model servers slowed the end-to-end tests beside them by more than the
scripts' own time on this 2-core machine.)
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD_SECONDS = 900
RUN_SECONDS = 600
_emulator: dict = {}
_go = threading.Event()


def run_clients(endpoint_url: str, home: Path) -> None:
    """Start the collected SDKs' client scripts (each once its venv is built) against this emulator."""
    if not _go.is_set():
        _emulator.update(endpoint_url=endpoint_url, home=home)
        _go.set()


class SdkVenv:
    def __init__(self, name: str, requirement: str, constraints: Path, script: str, bucket: str):
        self.name, self.requirement, self.constraints = name, requirement, constraints
        self.script, self.bucket = HERE / "clients" / script, bucket
        self.path = REPO / ".mlscale" / f"sdk-{name}"
        self._thread: threading.Thread | None = None
        self._error: str | None = None
        self._output: subprocess.CompletedProcess | None = None
        self._lock = threading.Lock()

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def start(self) -> None:
        """Build the venv (unless built), then run the client script once run_clients says where, in the
        background."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._build_and_run, name=f"sdk-{self.name}", daemon=True)
                self._thread.start()

    def results(self) -> dict:
        """What the client script printed as SDK-RESULTS (waiting for it)."""
        self.start()
        self._thread.join(BUILD_SECONDS + RUN_SECONDS)
        if self._error:
            raise AssertionError(self._error)
        done = self._output
        if done is None:
            raise AssertionError(f"the SDK {self.name} client did not finish")
        found = [line for line in done.stdout.splitlines() if "SDK-RESULTS " in line]  # after the SDK's dots
        assert done.returncode == 0 and found, done.stdout[-3000:] + done.stderr[-6000:]
        return json.loads(found[-1].split("SDK-RESULTS ", 1)[1])

    def _build_and_run(self) -> None:
        try:
            if not self._built():
                self._build()
            if not _go.wait(BUILD_SECONDS + RUN_SECONDS):
                self._error = "no SDK test asked for the client's results"
                return
            self._output = self._run()
        except Exception as error:  # noqa: BLE001 - reported to the test that reads the results
            self._error = f"the SDK {self.name} run failed: {error!r}"

    def _stamp(self) -> str:
        return hashlib.sha256(f"{self.requirement}\n{self.constraints.read_text()}".encode()).hexdigest()

    def _built(self) -> bool:
        stamp = self.path / ".built"
        return self.python.exists() and stamp.exists() and stamp.read_text() == self._stamp()

    def _build(self) -> None:
        # uv: pip took 2 minutes and 105 CPU-seconds for v3's 130 packages here, uv 8 s (the CPU a 2-core
        # machine's other tests need)
        uv = str(Path(sys.executable).parent / "uv")
        steps = [
            [uv, "venv", "--quiet", "--clear", "--python", sys.executable, str(self.path)],
            [
                uv,
                "pip",
                "install",
                "--quiet",
                "--python",
                str(self.python),
                "-c",
                str(self.constraints),
                self.requirement,
            ],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=BUILD_SECONDS)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(step)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        (self.path / ".built").write_text(self._stamp())

    def _run(self) -> subprocess.CompletedProcess:
        """The script with nothing of this process's environment but the emulator's address and dummy keys."""
        work = Path(tempfile.mkdtemp(prefix=f"sdk-{self.name}-", dir=_emulator["home"]))
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(work),
            "TMPDIR": str(work),
            "AWS_ENDPOINT_URL": _emulator["endpoint_url"],
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "SDK_TEST_ROLE": "arn:aws:iam::123456789012:role/mlscale-test",
            "SDK_TEST_BUCKET": self.bucket,
        }
        return subprocess.run(
            [str(self.python), str(self.script)], env=env, cwd=work, capture_output=True, text=True, timeout=RUN_SECONDS
        )


V2 = SdkVenv("v2", "sagemaker==2.257.7", HERE / "constraints-v2.txt", "v2_frameworks.py", "sdk-v2-test")
V3 = SdkVenv("v3", "sagemaker==3.27.0", HERE / "constraints-v3.txt", "v3_train_and_serve.py", "sdk-v3-test")
ALL = {"v2": V2, "v3": V3}
