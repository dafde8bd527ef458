"""Where the emulator listens and keeps its files; shared by the server and its executors."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PORT = 5055
ACCOUNT_ID = "123456789012"


def _names(variable: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in os.environ.get(variable, "").split(",") if n.strip())


@dataclass(frozen=True)
class EmulatorSettings:
    host: str
    port: int
    home: Path
    # Host names besides loopback and `host` that requests may name (a Compose service name), and the
    # browser origins answered with CORS: none unless set (mlscale_emulator.guard).
    allowed_hosts: tuple[str, ...] = field(default_factory=lambda: _names("MLSCALE_EMULATOR_ALLOWED_HOSTS"))
    allowed_origins: tuple[str, ...] = field(default_factory=lambda: _names("MLSCALE_EMULATOR_ALLOWED_ORIGINS"))

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def jobs_dir(self) -> Path:
        return self.home / "jobs"

    @classmethod
    def from_env(cls, port: int | None = None, home: str | None = None) -> EmulatorSettings:
        return cls(
            # Loopback only: the emulator runs user code and has no authentication.
            host=os.environ.get("MLSCALE_EMULATOR_HOST", "127.0.0.1"),
            port=int(port or os.environ.get("MLSCALE_EMULATOR_PORT", DEFAULT_PORT)),
            home=Path(home or os.environ.get("MLSCALE_EMULATOR_HOME", ".mlscale/emulator")).resolve(),
        )


_current: EmulatorSettings | None = None


def current() -> EmulatorSettings:
    """The settings of the server running in this process."""
    if _current is None:
        raise RuntimeError("the mlscale emulator is not running in this process")
    return _current


def activate(settings: EmulatorSettings) -> None:
    global _current
    _current = settings


_clients: dict[tuple[str, str, str], object] = {}
_clients_lock = threading.Lock()


def aws_client(service: str, region: str = "us-east-1"):
    """A boto3 client for the executors: they use the emulator's API like any AWS client would.

    One per service, region and server, shared by the executors' threads: boto3 clients are thread-safe, and
    making one (loading the service model) took 5-160 ms of each job. Made from a Session of their own under a
    lock, since boto3's default session is not thread-safe
    (https://boto3.amazonaws.com/v1/documentation/api/latest/guide/clients.html#multithreading-or-multiprocessing)."""
    import boto3
    from botocore.config import Config

    from mlscale_emulator.limits import EXECUTOR_AGENT

    endpoint = current().endpoint_url
    key = (service, region, endpoint)
    with _clients_lock:
        if key not in _clients:
            # several jobs' transfers share a client: room for their connections (s3transfer uses 10 each)
            _clients[key] = boto3.session.Session().client(
                service,
                region_name=region,
                endpoint_url=endpoint,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",  # its own work: not counted against the account's rates
                config=Config(max_pool_connections=50, user_agent_extra=EXECUTOR_AGENT),
            )
        return _clients[key]
