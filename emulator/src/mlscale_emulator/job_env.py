"""The environment every process the emulator starts gets: an allow-list, never the caller's environment.

The emulator is started from a shell or an Airflow process that may hold real secrets (AIRFLOW_CONN_*,
AWS_SECRET_ACCESS_KEY, tokens): a training script, a pip install or a Greengrass component must see none
of them, as a SageMaker container sees only its contract variables
(https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-running-container.html).
Jobs reach the emulator with its endpoint and dummy credentials, as a job's role reaches AWS.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# What a process needs to run on this machine, taken from the emulator's own environment.
PASSED = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "TERM",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)
PASSED_PREFIXES = ("LC_",)
DUMMY_KEY = "testing"
# Imported first by every job's Python: torch's TCPStore hosts on loopback (see its docstring).
JOB_SITE = str(Path(__file__).resolve().parent / "job_site")
# The emulated hosts are processes on this machine: gloo and NCCL talk over loopback, and listen only there.
LOOPBACK = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"}


def python_path(*first: object) -> str:
    """A job's PYTHONPATH: the emulator's job site, then `first` (the job's code, its venv)."""
    return os.pathsep.join([JOB_SITE, *(str(p) for p in first)])


def base() -> dict[str, str]:
    """The allow-listed part of this process's environment, with this interpreter's bin first on PATH
    (a recipe's `python` or a script's shebang finds the emulator's Python, as the image's would)."""
    env = {k: v for k, v in os.environ.items() if k in PASSED or k.startswith(PASSED_PREFIXES)}
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(
        [bin_dir, *(p for p in env.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p and p != bin_dir)]
    )
    return env


def emulator_access(region: str | None, endpoint_url: str | None = None) -> dict[str, str]:
    """What lets a job's own AWS calls reach the emulator, as its role's calls would reach AWS: the endpoint,
    dummy credentials, the region."""
    if endpoint_url is None:
        from mlscale_emulator import settings

        endpoint_url = settings.current().endpoint_url
    access = {"AWS_ENDPOINT_URL": endpoint_url, "AWS_ACCESS_KEY_ID": DUMMY_KEY, "AWS_SECRET_ACCESS_KEY": DUMMY_KEY}
    if region:
        access.update({"AWS_DEFAULT_REGION": region, "AWS_REGION": region})
    return access


def for_job(region: str | None, endpoint_url: str | None = None, **extra: str) -> dict[str, str]:
    """A job's environment: the allow-list, the emulator's access, the job site, loopback, then `extra`."""
    env = base()
    env.update(emulator_access(region, endpoint_url))
    env.update({"PYTHONUNBUFFERED": "1", "PYTHONPATH": python_path(), **LOOPBACK})
    env.update(extra)
    return env


def for_server(**extra: str) -> dict[str, str]:
    """The emulator server's own environment: the allow-list and its own settings (MLSCALE_EMULATOR_*,
    moto's MOTO_*), so that nothing it passes on can hold the caller's secrets."""
    env = base()
    env.update({k: v for k, v in os.environ.items() if k.startswith(("MLSCALE_EMULATOR_", "MOTO_"))})
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env
