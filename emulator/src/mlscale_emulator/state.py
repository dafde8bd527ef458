"""The emulator's state on disk: every moto backend (per account and region), saved on stop, restored on start.

moto keeps each service's state in a `BackendDict` ([account][region] -> backend) and has no persistence
of its own; mlscale keeps its services' state in backends of the same kind (see `region_state`), so one
snapshot of every backend's attributes holds it all: S3 objects, jobs, models and packages, endpoints,
FSx, Greengrass, Glue, Athena, CloudWatch Logs. moto's `/moto-api/reset` wipes the same backends.

What ran when the emulator went down cannot resume (its processes are gone): each service's `recover`
ends it Failed, with a reason that says so, after a restore.
"""

from __future__ import annotations

import copy
import importlib
import io
import logging
import os
import pickle
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from moto.core.base_backend import BackendDict, BaseBackend

log = logging.getLogger(__name__)
STATE_FILE = "state.pickle"
INTERRUPTED = "The mlscale emulator stopped while this ran; it cannot resume (restart the work)"


class RegionState(BaseBackend):
    """State of a service that moto does not have, or does not keep, for one account and region."""

    def __init__(self, region_name: str, account_id: str):
        super().__init__(region_name, account_id)
        self.data: dict[str, Any] = {}

    def table(self, name: str) -> dict:
        return self.data.setdefault(name, {})


def region_state(service: str) -> BackendDict[RegionState]:
    """A moto-style [account][region] store for one of mlscale's services (reset and saved like moto's)."""
    return BackendDict(RegionState, service)


def _backend_dicts() -> Iterator[tuple[str, BackendDict]]:
    """Every BackendDict the server has imported, named `module:attribute` so a restore can find it again."""
    seen: set[int] = set()
    for module_name, module in sorted(sys.modules.items()):
        if module is None or not module_name.startswith(("moto.", "mlscale_emulator")):
            continue
        for attribute, value in list(vars(module).items()):
            if isinstance(value, BackendDict) and id(value) not in seen:
                seen.add(id(value))
                yield f"{module_name}:{attribute}", value


def _collect() -> dict[str, dict[str, dict[str, dict]]]:
    snapshot: dict[str, dict[str, dict[str, dict]]] = {}
    for key, backends in _backend_dicts():
        accounts = {
            account: {region: dict(vars(backend)) for region, backend in list(regions.items())}
            for account, regions in list(backends.items())
        }
        if any(accounts.values()):
            snapshot[key] = accounts
    return snapshot


_LOCK, _RLOCK = type(threading.Lock()), type(threading.RLock())


class _Pickler(pickle.Pickler):
    """What plain pickle refuses in moto's backends, kept by its meaning:

    - a lock is free when nothing runs (moto's SQS queues hold one): a fresh lock takes its place;
    - a defaultdict whose factory is a lambda (moto's SSM tags: `defaultdict(lambda: defaultdict(dict))`)
      gets a factory that makes a copy of what the lambda makes (an empty container);
    - a defaultdict subclass whose constructor takes other arguments (moto's SSM ParameterDict) is rebuilt
      without calling it, with its attributes.
    """

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _RLOCK):
            return threading.RLock, ()
        if isinstance(obj, _LOCK):
            return threading.Lock, ()
        if isinstance(obj, defaultdict):
            factory = obj.default_factory
            if getattr(factory, "__name__", "") == "<lambda>":
                factory = _Copies(factory())
            elif type(obj) is defaultdict:
                return NotImplemented  # plain pickle does it
            return _defaultdict, (type(obj), factory, dict(obj), dict(getattr(obj, "__dict__", {})))
        return NotImplemented


class _Copies:
    """A picklable default factory: a fresh deep copy of one empty value."""

    def __init__(self, template: Any):
        self.template = template

    def __call__(self) -> Any:
        return copy.deepcopy(self.template)


def _defaultdict(kind: type, factory: Any, items: dict, attributes: dict) -> defaultdict:
    restored = kind.__new__(kind)
    defaultdict.__init__(restored, factory, items)
    if attributes:
        vars(restored).update(attributes)
    return restored


def _dumps(value: Any) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


def _pickled_services() -> dict[str, bytes]:
    """Each service on its own: one that cannot be pickled is left out (and logged), not all of them."""
    parts = {}
    for key, accounts in _collect().items():
        try:
            parts[key] = _dumps(accounts)
        except (TypeError, AttributeError, pickle.PicklingError) as error:
            log.warning("the state of %s is not saved: %s", key, error)
    return parts


def save(home: Path) -> Path:
    """Write every backend's state to <home>/state.pickle (atomically: a crash mid-write keeps the old one)."""
    path = home / STATE_FILE
    for attempt in range(5):  # a job thread may still change a dict while it is copied
        try:
            data = pickle.dumps(_pickled_services(), protocol=pickle.HIGHEST_PROTOCOL)
            break
        except RuntimeError:
            if attempt == 4:
                raise
            time.sleep(0.1)
    partial = path.with_suffix(".partial")
    partial.write_bytes(data)
    os.replace(partial, path)
    log.info("saved the emulator's state to %s (%d bytes)", path, len(data))
    return path


def restore(home: Path) -> bool:
    """Load <home>/state.pickle into moto's backends; False when there is none."""
    path = home / STATE_FILE
    if not path.exists():
        return False
    for key, blob in pickle.loads(path.read_bytes()).items():
        module_name, attribute = key.split(":")
        try:
            backends = getattr(importlib.import_module(module_name), attribute)
            accounts = pickle.loads(blob)
        except Exception as error:  # noqa: BLE001 - one service's state that no longer loads is left out
            log.warning("the saved state of %s is not restored: %s", key, error)
            continue
        for account, regions in accounts.items():
            for region, attributes in regions.items():
                vars(backends[account][region]).update(attributes)
    log.info("restored the emulator's state from %s", path)
    return True


def forget(home: Path) -> None:
    """Wipe the saved state and the files the resources kept (jobs' folders, FSx file systems, devices)."""
    import shutil

    (home / STATE_FILE).unlink(missing_ok=True)
    for folder in ("jobs", "fsx", "greengrass"):
        shutil.rmtree(home / folder, ignore_errors=True)


def backends_of(backends: BackendDict) -> Iterator[Any]:
    """Each region's backend that exists (no new ones are created)."""
    for regions in list(backends.values()):
        yield from list(regions.values())
