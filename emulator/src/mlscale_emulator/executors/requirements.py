"""A job's requirements.txt, installed as the toolkit installs it into the image: only what is missing.

The job's processes run the emulator's Python, which already has torch and the rest. A venv per job sees
those packages through a .pth file, so pip installs only what is missing into the venv's site-packages,
which goes on the job's PYTHONPATH. (`pip --target` would copy torch again, ~1 GB; `--system-site-packages`
would see the base interpreter's packages, not this venv's.)
"""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path


def install(requirements: Path, venv: Path) -> str | None:
    """Install into `venv`; None on success, else the end of pip's error output."""
    env = _pip_environment()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=env)
    for packages in site_packages(venv):
        (packages / "_job_python.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--quiet",
            "-r",
            str(requirements),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    return None if result.returncode == 0 else result.stderr[-800:]


def _pip_environment() -> dict[str, str]:
    """The job's allow-list, and what pip needs to reach its index: its own settings and the proxies."""
    import os

    from mlscale_emulator import job_env

    env = job_env.base()
    env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_") or k.lower().endswith("_proxy")})
    return env


def site_packages(venv: Path) -> list[Path]:
    """What requirements.txt added (none when the job had no requirements)."""
    return sorted(venv.glob("lib/python*/site-packages"))
