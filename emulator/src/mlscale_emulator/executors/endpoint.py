"""Real-time endpoints: a fleet of local model servers per endpoint config, and the routing to them.

Each production variant gets InitialInstanceCount model servers (the same
server Batch Transform uses, on 127.0.0.1); InvokeEndpoint picks a variant by
weight (or the TargetVariant asked for) and an instance round-robin.
"""

from __future__ import annotations

import itertools
import random
import threading

from mlscale_emulator import confine, job_env, settings
from mlscale_emulator.executors import model_code
from mlscale_emulator.executors.log_shipper import LogShipper
from mlscale_emulator.executors.processes import shutting_down
from mlscale_emulator.executors.transform import ModelContainer, TransformFailed

LOG_GROUP = "/aws/sagemaker/Endpoints"


class ModelError(Exception):
    """The container answered an error: InvokeEndpoint's ModelError with the original status."""

    def __init__(self, status: int, body: str, variant: str):
        super().__init__(body)
        self.status, self.body, self.variant = status, body, variant


class Fleet:
    """The model servers serving one endpoint config."""

    def __init__(self, endpoint_name: str, config_name: str, variants: list[dict], region: str):
        self.endpoint_name, self.config_name, self.region = endpoint_name, config_name, region
        self.variants = variants
        self.servers: dict[str, list[ModelContainer]] = {}
        self._round_robin: dict[str, itertools.cycle] = {}
        self._shippers: list[LogShipper] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start every instance and wait until each answers /ping; raise TransformFailed with the reason."""
        s3 = settings.aws_client("s3", self.region)
        sagemaker = settings.aws_client("sagemaker", self.region)
        logs = settings.aws_client("logs", self.region)
        root = confine.within(settings.current().jobs_dir, "endpoints", self.endpoint_name, self.config_name)
        for variant in self.variants:
            model = sagemaker.describe_model(ModelName=variant["ModelName"])
            container = model.get("PrimaryContainer") or (model.get("Containers") or [{}])[0]
            servers: list[ModelContainer] = []
            self.servers[variant["VariantName"]] = servers  # filled as they start: stop() reaches each one
            for index in range(int(variant.get("InitialInstanceCount", 1))):
                if shutting_down.is_set():  # a server started now would outlive the emulator
                    raise TransformFailed("the emulator is stopping")
                model_dir, code_dir = model_code.unpack(
                    s3, container, confine.within(root, variant["VariantName"], f"instance-{index}")
                )
                shipper = LogShipper(
                    logs, f"{LOG_GROUP}/{self.endpoint_name}", f"{variant['VariantName']}/i-emulated{index:04d}"
                )
                self._shippers.append(shipper)
                env = {"SAGEMAKER_REGION": self.region, "PYTHONUNBUFFERED": "1", **(container.get("Environment") or {})}
                servers.append(ModelContainer(model_dir, code_dir, _base_env(env), shipper, container.get("Image", "")))
            self._round_robin[variant["VariantName"]] = itertools.cycle(servers)
        for servers in self.servers.values():
            for server in servers:
                server.wait_ready()

    def invoke(self, body: bytes, content_type: str | None, accept: str | None, target_variant: str | None = None):
        variant = target_variant or self._pick_variant()
        if variant not in self.servers:
            raise KeyError(variant)
        with self._lock:
            server = next(self._round_robin[variant])
        status, answer, kind = server.post(body, content_type, accept, timeout=60)  # real-time: 60 s to answer
        if status != 200:
            raise ModelError(status, answer.decode(errors="replace"), variant)
        return answer, kind, variant

    def _pick_variant(self) -> str:
        weights = [float(v.get("InitialVariantWeight", 1.0)) for v in self.variants]
        return random.choices([v["VariantName"] for v in self.variants], weights=weights)[0]

    def stop(self) -> None:
        for servers in self.servers.values():
            for server in servers:
                server.stop()
        for shipper in self._shippers:
            shipper.close()


def _base_env(extra: dict[str, str]) -> dict[str, str]:
    return job_env.for_job(extra.get("SAGEMAKER_REGION"), **extra)


__all__ = ["Fleet", "ModelError", "TransformFailed"]
