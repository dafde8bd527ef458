"""What include/ ships runs in a stock SageMaker or Greengrass Python, where mlscale is not installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

SCRIPTS = sorted(p for p in (REPO / "include").rglob("*.py"))
# Imports each script as its job would find it (its own folder on sys.path), with `mlscale` unimportable.
BLOCKER = """
import importlib.abc, importlib.util, sys
class NoMlscale(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mlscale", "mlscale_emulator", "mlscale_example"):
            raise ModuleNotFoundError(f"No module named {name!r} (as in a SageMaker container)")
sys.meta_path.insert(0, NoMlscale())
sys.path = [p for p in sys.path if not p.rstrip("/").endswith("plugins")]
script = sys.argv[1]
sys.path.insert(0, script.rsplit("/", 1)[0])
spec = importlib.util.spec_from_file_location("job_script", script)
spec.loader.exec_module(importlib.util.module_from_spec(spec))
try:
    import mlscale
except ModuleNotFoundError:
    print("ok: mlscale not importable")
"""


def test_every_script_is_found():
    assert {p.name for p in SCRIPTS} >= {"train.py", "shard_loader.py", "shard.py", "inference_app.py"}


@pytest.mark.parametrize("script", SCRIPTS, ids=[str(p.relative_to(REPO)) for p in SCRIPTS])
def test_imports_in_an_interpreter_without_mlscale(script):
    result = subprocess.run(
        [sys.executable, "-c", BLOCKER, str(script)], capture_output=True, text=True, timeout=120, cwd="/"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ok: mlscale not importable" in result.stdout
