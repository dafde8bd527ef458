"""Where the emulator listens and keeps its files; shared by the server and its executors."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PORT = 5055
ACCOUNT_ID = "123456789012"


@dataclass(frozen=True)
class EmulatorSettings:
    host: str
    port: int
    home: Path

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


def aws_client(service: str, region: str = "us-east-1"):
    """A boto3 client for the executors: they use the emulator's API like any AWS client would."""
    import boto3

    return boto3.client(
        service,
        region_name=region,
        endpoint_url=current().endpoint_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
