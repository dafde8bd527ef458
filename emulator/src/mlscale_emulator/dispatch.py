"""Two lookups moto's server repeats for every request, remembered.

To route a request, moto's DomainDispatcherApplication lists moto's package directory (~170 `isdir` calls) to
see whether the host names a service, twice, under a lock that every request takes; and BaseResponse lists its
class's methods with `inspect.getmembers` to see whether the action is one. Profiled over DescribeTrainingJob
calls, the two were ~30% of the server's CPU for each request. The first depends only on the host; the second
only on the class, so it is remembered with the classes' attribute counts: a patch that adds an action (the
emulator adds several, some when moto first loads a service) is seen.
"""

from __future__ import annotations

import threading
from typing import Any

_installed = False
_install_lock = threading.Lock()


def install() -> None:
    global _installed
    with _install_lock:
        if _installed:
            return
        _remember_backends_for_hosts()
        _remember_action_names()
        _installed = True


def _remember_backends_for_hosts() -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    moto_lookup = DomainDispatcherApplication.get_backend_for_host
    known: dict[str | None, Any] = {}

    def get_backend_for_host(self, host: str | None) -> Any:
        if host not in known:  # a lookup racing another computes the same answer twice, harmlessly
            known[host] = moto_lookup(self, host)
        return known[host]

    DomainDispatcherApplication.get_backend_for_host = get_backend_for_host


def _remember_action_names() -> None:
    from moto.core import responses

    moto_names = responses.method_names_from_class
    known: dict[tuple, list[str]] = {}

    def method_names_from_class(clazz: type) -> list[str]:
        key = (clazz, tuple(len(vars(base)) for base in clazz.__mro__))
        names = known.get(key)
        if names is None:
            names = known[key] = moto_names(clazz)
        return names

    responses.method_names_from_class = method_names_from_class
