"""Imported at start-up by every Python process of an emulated job: the emulator puts this folder first on the
job's PYTHONPATH (https://docs.python.org/3/library/site.html). It is not part of the job's contract.

On SageMaker each host is a container of its own; here they are processes on the user's machine, so what a
job listens on must stay on loopback. torch's TCPStore, the store torchrun's rendezvous and
`init_process_group` host, binds every interface whatever host it is given. TCPStore takes a socket that
already listens (`master_listen_fd`): as torch.distributed first loads, its TCPStore becomes one that
hosts on a socket bound to 127.0.0.1. Gloo's own sockets follow GLOO_SOCKET_IFNAME=lo, which the emulator sets.
"""

from __future__ import annotations

import importlib.abc
import socket
import sys

_PARAMETERS = (
    "host_name",
    "port",
    "world_size",
    "is_master",
    "timeout",
    "wait_for_workers",
    "multi_tenant",
    "master_listen_fd",
    "use_libuv",
)  # TCPStore's, in order


def loopback_listener(port: int) -> int:
    """A socket listening on 127.0.0.1:`port` (0: any free port); its file descriptor, handed to the caller."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(socket.SOMAXCONN)
    return sock.detach()


def _after_c10d_init() -> None:
    """torch.distributed first calls torch._C._c10d_init(), which makes the c10d submodule: patch right after."""
    torch_c = sys.modules["torch._C"]
    c10d_init = torch_c._c10d_init

    def init(*args, **kwargs):
        done = c10d_init(*args, **kwargs)
        _host_tcpstores_on_loopback(torch_c._distributed_c10d)
        return done

    torch_c._c10d_init = init


def _host_tcpstores_on_loopback(c10d) -> None:

    hosted_anywhere = c10d.TCPStore

    class LoopbackTCPStore(hosted_anywhere):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            given = {**dict(zip(_PARAMETERS, args)), **kwargs}
            if given.get("is_master") and given.get("master_listen_fd") is None:
                given["master_listen_fd"] = loopback_listener(int(given.get("port") or 0))
            super().__init__(**given)

    LoopbackTCPStore.__name__ = LoopbackTCPStore.__qualname__ = "TCPStore"
    c10d.TCPStore = LoopbackTCPStore


class _BeforeTorchDistributed(importlib.abc.MetaPathFinder):
    """Patches once, when `torch.distributed` is first looked up (torch._C is loaded by then), then steps aside."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch.distributed":
            sys.meta_path.remove(self)
            try:
                _after_c10d_init()
            except Exception as error:  # noqa: BLE001 - a torch without c10d: nothing hosts a store
                print(f"mlscale emulator: TCPStore not confined to loopback: {error!r}", file=sys.stderr)
        return None


sys.meta_path.insert(0, _BeforeTorchDistributed())
