"""The SageMaker Python SDKs, each in a virtual environment of its own, built once and reused.

The SDK pins what Airflow 3.3 cannot share a venv with (v2: attrs<26, protobuf<7, packaging<25; v3:
protobuf<7, mock<5 and MLflow), so the tests run users' SDK code in its own interpreter, as a data scientist's
notebook would, against the session's emulator. A build starts in the background when the session collects
an SDK test, so its download overlaps the tests before it.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD_SECONDS = 900


class SdkVenv:
    def __init__(self, name: str, requirement: str, constraints: Path):
        self.name, self.requirement, self.constraints = name, requirement, constraints
        self.path = REPO / ".mlscale" / f"sdk-{name}"
        self._thread: threading.Thread | None = None
        self._error: str | None = None
        self._lock = threading.Lock()

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def _stamp(self) -> str:
        return hashlib.sha256(f"{self.requirement}\n{self.constraints.read_text()}".encode()).hexdigest()

    def _built(self) -> bool:
        stamp = self.path / ".built"
        return self.python.exists() and stamp.exists() and stamp.read_text() == self._stamp()

    def start(self) -> None:
        with self._lock:
            if self._thread is None and not self._built():
                self._thread = threading.Thread(target=self._build, name=f"build-sdk-{self.name}", daemon=True)
                self._thread.start()

    def _build(self) -> None:
        steps = [[sys.executable, "-m", "venv", "--clear", str(self.path)],
                 [str(self.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                  "-c", str(self.constraints), self.requirement]]  # fmt: skip
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=BUILD_SECONDS)
            if done.returncode != 0:
                self._error = f"{' '.join(step)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
                return
        (self.path / ".built").write_text(self._stamp())

    def ready(self) -> Path:
        """The venv's python, once built (waiting for a build in progress)."""
        self.start()
        if self._thread is not None:
            self._thread.join(BUILD_SECONDS)
        if self._error or not self._built():
            raise RuntimeError(self._error or f"the SDK {self.name} venv was not built in {BUILD_SECONDS} s")
        return self.python


V2 = SdkVenv("v2", "sagemaker==2.257.7", HERE / "constraints-v2.txt")
ALL = {"v2": V2}
