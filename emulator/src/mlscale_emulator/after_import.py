"""Run a patch right after a module is first imported, so that the server loads moto's big backends only
when a request needs them, as plain moto does.

moto's Batch imports its EC2 (about 100 MB of Python objects, most of it the regions' availability zones and
instance types) and its CloudFormation imports every backend a template can name (about 125 MB). The
emulator patches both, and importing them to patch them at start-up cost every run that never used them.
Python has no post-import hook of its own: this finder finds the module with the other finders and runs the
patches once the module has executed (https://docs.python.org/3/reference/import.html#the-meta-path).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from importlib.abc import MetaPathFinder

_pending: dict[str, list[Callable[[], None]]] = {}
_lock = threading.RLock()


class _AfterImportFinder(MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in _pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute = loader.exec_module

        def execute_then_patch(module) -> None:
            execute(module)
            _run(name)

        loader.exec_module = execute_then_patch  # this spec's own loader: no other module's import changes
        return spec


_finder = _AfterImportFinder()


def _run(name: str) -> None:
    with _lock:
        patches = _pending.pop(name, [])
    for patch in patches:
        patch()


def when_imported(name: str, patch: Callable[[], None]) -> None:
    """Call `patch()` once `name` is imported: now if it already is, else right after its import."""
    with _lock:
        if name not in sys.modules:
            if _finder not in sys.meta_path:
                sys.meta_path.insert(0, _finder)
            if patch not in _pending.setdefault(name, []):
                _pending[name].append(patch)
            return
    patch()
