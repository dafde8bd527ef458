"""A simulated Greengrass core device: takes a deployment, installs and runs its components.

For each component: the manifest for the device's platform, its artifacts
from S3 (ZIP ones unarchived), then the Install step (120 s) and the Run step
(the emulator waits for it to exit, up to the deployment's component timeout,
and treats a clean exit as success). Output goes to CloudWatch Logs,
/aws/greengrass/UserComponent/<region>/<component>, one stream per device.
With failureHandlingPolicy ROLLBACK a failed device goes back to the
components it ran before.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import zipfile
from pathlib import Path

from mlscale_emulator import confine, job_env, settings
from mlscale_emulator.executors import s3io
from mlscale_emulator.executors.log_shipper import LogShipper
from mlscale_emulator.greengrass.recipes import RecipeError, configuration, lifecycle_step, select_manifest, substitute

INSTALL_TIMEOUT = 120


class DeviceFailure(Exception):
    pass


def device_root(thing: str) -> Path:
    """The simulated device's own directory; DeviceFailure for a thing name that would lead outside."""
    try:
        return confine.within(settings.current().home / "greengrass", thing)
    except confine.PathEscape as error:
        raise DeviceFailure(f"thing name {thing!r}: {error}") from None


def run_step(script: str, cwd: Path, timeout: int, env: dict[str, str], shipper: LogShipper, what: str) -> None:
    process = subprocess.run(
        ["/bin/sh", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    for line in (process.stdout + process.stderr).splitlines():
        shipper.write(line)
    if process.returncode != 0:
        tail = (process.stderr or process.stdout).strip().splitlines()[-3:]
        raise DeviceFailure(f"{what} exited {process.returncode}: {' | '.join(tail)}")


def deploy_component(thing: str, platform: dict, recipe: dict, update: dict | None, timeout: int, region: str) -> None:
    name, version = recipe["componentname"], recipe["componentversion"]
    try:
        manifest = select_manifest(recipe, platform["os"], platform["architecture"])
    except RecipeError as error:
        raise DeviceFailure(str(error)) from None
    root = device_root(thing)
    try:
        artifacts = confine.within(root, "packages", "artifacts", name, version)
        decompressed = confine.within(root, "packages", "artifacts-unarchived", name, version)
        work = confine.within(root, "work", name)
    except confine.PathEscape as error:
        raise DeviceFailure(f"component {name} {version}: {error}") from None
    for folder in (artifacts, decompressed, work):
        folder.mkdir(parents=True, exist_ok=True)
    s3 = settings.aws_client("s3", region)
    for artifact in manifest.get("artifacts") or []:
        uri = artifact.get("uri", "")
        try:
            target = confine.within(artifacts, Path(uri).name)
            bucket, key = s3io.split_s3_uri(uri)
            s3io.download(s3, bucket, key, target)
        except Exception as error:  # noqa: BLE001 - the download's reason is the device's reason
            raise DeviceFailure(f"cannot download artifact {uri}: {error}") from None
        if str(artifact.get("unarchive", "NONE")).upper() == "ZIP":
            with zipfile.ZipFile(target) as archive:
                archive.extractall(decompressed / target.stem)
    config = configuration(recipe, update)
    fill = dict(artifacts=str(artifacts), decompressed=str(decompressed), work=str(work), thing=thing, config=config)
    # the device's python3 is the emulator's (with numpy and torch), as a real device has its own installed
    env = job_env.for_job(region, AWS_IOT_THING_NAME=thing, SVCUID="emulated")
    lifecycle = manifest.get("lifecycle") or recipe.get("lifecycle") or {}
    logs = settings.aws_client("logs", region)
    shipper = LogShipper(logs, f"/aws/greengrass/UserComponent/{region}/{name}", thing)
    try:
        for step_name, default_timeout in (
            ("install", INSTALL_TIMEOUT),
            ("run", timeout),
            ("startup", INSTALL_TIMEOUT),
        ):
            script, step_timeout = lifecycle_step(lifecycle.get(step_name))
            if script:
                try:
                    run_step(
                        substitute(script, **fill),
                        work,
                        int(step_timeout or default_timeout),
                        env,
                        shipper,
                        f"{name} {step_name.capitalize()}",
                    )
                except subprocess.TimeoutExpired:
                    raise DeviceFailure(f"{name} {step_name.capitalize()} timed out") from None
    finally:
        shipper.close()


def forget(thing: str) -> None:
    try:
        shutil.rmtree(device_root(thing), ignore_errors=True)
    except DeviceFailure:  # a name that leads outside has no files here
        pass


def now() -> float:
    return time.time()
