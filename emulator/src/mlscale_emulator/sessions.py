"""Process sessions a parent starts, recorded in a folder, so that the next start ends them if the parent was
killed (SIGKILL, an OOM kill, a closed terminal) before it could.

Each job, model server or Airflow component is started in a session of its own (`start_new_session`), so its
whole tree shares the session id, the leader's pid. A record is `<folder>/<pid>` holding the leader's start
time (field 22 of /proc/<pid>/stat): a pid the kernel later gives to an unrelated process is told apart by
its start time, and while any member of a session lives, its id is not handed out again. Linux only (/proc);
elsewhere nothing is recorded and nothing is ended.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")


def _stat(pid: int) -> tuple[int, int] | None:
    """(session id, start time) of a live process, or None."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) ": state is field 3
    if fields[0] in ("Z", "X"):  # exited, not yet reaped: nothing left to end
        return None
    return int(fields[3]), int(fields[19])


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (None if it is not running): with the pid, its identity."""
    found = _stat(pid)
    return None if found is None else found[1]


def record(folder: Path, pid: int) -> None:
    """Remember the session that `pid` leads."""
    found = _stat(pid)
    if found is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(pid)).write_text(str(found[1]))


def forget(folder: Path, pid: int) -> None:
    with contextlib.suppress(OSError):
        (folder / str(pid)).unlink()


def members(session: int, started: int | None = None) -> list[int]:
    """The live processes of `session`; none when its leader's pid now belongs to another process."""
    leader = _stat(session)
    if leader is not None and started is not None and leader[1] != started:
        return []
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None and stat[0] == session:
            found.append(int(entry.name))
    return sorted(found)


def leftovers(folder: Path) -> dict[int, list[int]]:
    """{session: its live processes} of the recorded sessions that still run."""
    alive = {}
    for path in sorted(folder.glob("[0-9]*")) if folder.is_dir() else []:
        try:
            started = int(path.read_text() or 0)
        except (OSError, ValueError):
            started = None
        if pids := members(int(path.name), started):
            alive[int(path.name)] = pids
    return alive


def end_leftovers(folder: Path, grace: float = 5.0) -> list[int]:
    """End every recorded session that still runs (SIGTERM, SIGKILL after `grace`); forget all records.
    Returns the pids that were running."""
    alive = leftovers(folder)
    pids = [pid for group in alive.values() for pid in group]
    _signal(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_stat(pid) for pid in pids):
        time.sleep(0.1)
    _signal([pid for pid in pids if _stat(pid)], signal.SIGKILL)
    for path in folder.glob("[0-9]*") if folder.is_dir() else []:
        with contextlib.suppress(OSError):
            path.unlink()
    return pids


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def dies_with_parent():
    """A Popen `preexec_fn`: the child gets SIGTERM when the thread that started it dies (Linux's
    PR_SET_PDEATHSIG, https://man7.org/linux/man-pages/man2/prctl.2.html); None where there is no prctl.
    Only for children started from a thread that lives as long as its process: the main thread. `prctl` is
    looked up here, in the parent: the child, between fork and exec, only calls it."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)
    return lambda: prctl(pr_set_pdeathsig, sigterm)
