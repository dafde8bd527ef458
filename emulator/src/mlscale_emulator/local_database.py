"""The local stack's metadata database: a PostgreSQL server of its own, from the pgserver wheel.

On SQLite Airflow takes one writer at a time: `airflow backfill create` against the running stack met
"database is locked". pgserver (PyPI) ships PostgreSQL's binaries in a wheel, so `make install` needs
no root and no system package. The server keeps its data in <state dir>/postgres and listens on a Unix
socket there only (no TCP port). PostgreSQL refuses to run as root: run as root, pgserver runs it as a
`pgserver` system user that it creates, and lets that user traverse the folders above the data directory.
"""

from __future__ import annotations

import logging
from pathlib import Path

DATABASE = "airflow"


def start(data_dir: Path) -> str:
    """Start (initialising on first use) the server and make sure Airflow's database exists; its SQLAlchemy URI."""
    import warnings

    with warnings.catch_warnings():  # platformdirs: XDG_RUNTIME_DIR unset, it uses /tmp/runtime-<uid> (fine here)
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        import pgserver

    logging.getLogger("pgserver").setLevel(logging.WARNING)
    data_dir.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(data_dir, cleanup_mode=None)  # stop() stops it, after Airflow's components
    if DATABASE not in server.psql(f"SELECT datname FROM pg_database WHERE datname = '{DATABASE}'"):
        server.psql(f"CREATE DATABASE {DATABASE}")
    return f"postgresql+psycopg2://postgres@/{DATABASE}?host={data_dir}"


def stop(data_dir: Path) -> None:
    """A fast shutdown (open sessions are ended, nothing committed is lost); nothing to do if it is not running."""
    import subprocess

    from pgserver._commands import pg_ctl
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(data_dir)
    if info is None or not info.is_running():
        return
    owner = data_dir.owner()
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data_dir, user=owner if owner != "root" else None, timeout=60)
    except subprocess.CalledProcessError:
        info.process.terminate()


def set_in_airflow_cfg(home: Path, uri: str) -> None:
    """`[database] sql_alchemy_conn` in the home's airflow.cfg, so every `airflow` command on this home uses it."""
    config = home / "airflow.cfg"
    lines = config.read_text().splitlines() if config.exists() else []
    setting = f"sql_alchemy_conn = {uri}"
    if "[database]" not in lines:
        lines += ["", "[database]", setting]
    else:
        start = lines.index("[database]") + 1
        end = next((i for i in range(start, len(lines)) if lines[i].startswith("[")), len(lines))
        found = [i for i in range(start, end) if lines[i].split("=")[0].strip() == "sql_alchemy_conn"]
        if found:
            lines[found[0]] = setting
        else:
            lines.insert(start, setting)
    config.write_text("\n".join(lines) + "\n")
