"""Runs a Neo compilation job for real: load the model, compile it for the declared input, check it.

PyTorch models (TorchScript model.pt in model.tar.gz) are frozen, optimised
for inference and traced at the DataInputConfig shape; the compiled model
must agree with the original on random inputs (the max abs difference is
reported). A wrong shape or an unsupported framework fails the job with the
reason, as Neo does. The output is <S3OutputLocation>/<model>-<target>.tar.gz. The compiler runs in a
process of its own, as a job does: torch never loads into the emulator server.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import tarfile
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mlscale_emulator import job_env, settings
from mlscale_emulator.executors import s3io

log = logging.getLogger(__name__)
TOLERANCE = 1e-4


class CompilationFailed(Exception):
    pass


def input_shapes(data_input_config: str) -> dict[str, list[int]]:
    """DataInputConfig as Neo takes it for PyTorch: {"input0": [1, 3, 224, 224]} or [[1, 3, 224, 224]]."""
    try:
        parsed = json.loads(data_input_config)
    except ValueError:
        raise CompilationFailed(
            f"ClientError: InputConfiguration: DataInputConfig is not valid JSON: {data_input_config!r}"
        ) from None
    if isinstance(parsed, list) and parsed and all(isinstance(x, int) for x in parsed):
        parsed = [parsed]
    shapes = parsed if isinstance(parsed, dict) else {f"input{i}": s for i, s in enumerate(parsed)}
    for name, shape in shapes.items():
        if not (isinstance(shape, list) and shape and all(isinstance(d, int) and d > 0 for d in shape)):
            raise CompilationFailed(
                f"ClientError: InputConfiguration: input {name} needs a shape of positive integers, got {shape!r}"
            )
    return shapes


def compile_torchscript(model_path: Path, shapes: dict[str, list[int]], out_path: Path) -> dict[str, Any]:
    import torch

    try:
        original = torch.jit.load(str(model_path), map_location="cpu").eval()
    except Exception as error:  # noqa: BLE001 - the loader's message is the reason
        raise CompilationFailed(f"ClientError: the model is not a TorchScript module Neo can load: {error}") from None
    examples = tuple(torch.rand(*shape) for shape in shapes.values())
    try:
        with torch.no_grad():
            original(*examples)
            torch.jit.freeze(original)
    except Exception as error:  # noqa: BLE001
        message = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        raise CompilationFailed(
            f"ClientError: InputConfiguration: the model does not accept inputs of shape "
            f"{list(shapes.values())}: {message}"
        ) from None

    # optimize_for_inference fuses more, but some of its graphs do not survive save/load: keep what does.
    # Each pass starts from a fresh load: optimize_for_inference rewrites the module it is given.
    def fresh():
        return torch.jit.freeze(torch.jit.load(str(model_path), map_location="cpu").eval())

    passes = [("freeze+optimize_for_inference", lambda: torch.jit.optimize_for_inference(fresh())), ("freeze", fresh)]
    for name, build in passes:
        try:
            with torch.no_grad():
                traced = torch.jit.trace(build(), examples, check_trace=False)
            buffer = io.BytesIO()
            torch.jit.save(traced, buffer)
            buffer.seek(0)
            compiled = torch.jit.load(buffer, map_location="cpu")
            with torch.no_grad():
                compiled(*examples)
            break
        except Exception as error:  # noqa: BLE001 - try the next, plainer pass
            log.info("compile pass %s not usable: %s", name, str(error).splitlines()[0] if str(error) else error)
    else:
        raise CompilationFailed("InternalServerError: no compiled form of the model survives save and load")
    worst = 0.0
    with torch.no_grad():
        for _ in range(8):
            probe = tuple(torch.rand(*shape) for shape in shapes.values())
            worst = max(worst, float((compiled(*probe) - original(*probe)).abs().max()))
    if worst > TOLERANCE:
        raise CompilationFailed(f"InternalServerError: the compiled model differs from the original by {worst:.3g}")
    compiled.save(str(out_path))
    return {"max_abs_diff": worst, "shapes": shapes, "passes": name}


def compile_in_a_process(model_path: Path, shapes: dict[str, list[int]], out_path: Path) -> dict[str, Any]:
    """compile_torchscript in `python -m mlscale_emulator.executors.compilation`; its report or its failure."""
    done = subprocess.run(
        [sys.executable, "-m", __name__, str(model_path), json.dumps(shapes), str(out_path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=job_env.base(),
    )
    last = (done.stdout.strip().splitlines() or [""])[-1]
    if done.returncode == 0:
        return json.loads(last)
    if done.returncode == FAILED_EXIT:
        raise CompilationFailed(json.loads(last)["failure"])
    raise CompilationFailed(
        f"InternalServerError: the compiler exited with {done.returncode}: {done.stderr.strip()[-500:]}"
    )


FAILED_EXIT = 3  # the model cannot be compiled (CompilationFailed); any other non-zero code is a crash


def main(argv: list[str]) -> int:
    try:
        report = compile_torchscript(Path(argv[0]), json.loads(argv[1]), Path(argv[2]))
    except CompilationFailed as failed:
        print(json.dumps({"failure": str(failed)}))
        return FAILED_EXIT
    print(json.dumps(report))
    return 0


class CompilationRun:
    def __init__(self, job: Any, region: str):
        self.job, self.region = job, region
        self.work = settings.current().jobs_dir / "compilation" / job.compilation_job_name
        self.thread = threading.Thread(target=self._run, name=f"neo-{job.compilation_job_name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _finish(self, status: str, failure: str = "") -> None:
        job = self.job
        job.compilation_end_time = job.last_modified_time = datetime.now(UTC)
        job.failure_reason = failure[:1024]
        job.compilation_job_status = status
        log.info("compilation job %s: %s %s", job.compilation_job_name, status, failure[:200])

    def _run(self) -> None:
        try:
            self._execute()
            self._finish("COMPLETED")
        except CompilationFailed as failed:
            self._finish("FAILED", str(failed))
        except Exception as error:
            log.exception("compilation crashed")
            self._finish("FAILED", f"InternalServerError: {error!r}")

    def _execute(self) -> None:
        job = self.job
        config = job.input_config or {}
        framework = config.get("Framework", "")
        if framework != "PYTORCH":
            raise CompilationFailed(
                f"ClientError: Framework {framework} is not emulated: the emulator compiles "
                "PYTORCH (TorchScript) models"
            )
        shapes = input_shapes(config.get("DataInputConfig", ""))
        s3 = settings.aws_client("s3", self.region)
        source = self.work / "model"
        source.mkdir(parents=True, exist_ok=True)
        try:
            s3io.download_and_extract(s3, config["S3Uri"], source)
        except Exception as error:  # noqa: BLE001 - S3's or tar's message is the reason
            raise CompilationFailed(f"ClientError: cannot read the model at {config['S3Uri']}: {error}") from None
        models = [p for p in source.rglob("*") if p.suffix in (".pt", ".pth")]
        if len(models) != 1:
            raise CompilationFailed(
                f"ClientError: model.tar.gz must hold one .pt/.pth file, found {[p.name for p in models]}"
            )
        compiled_dir = self.work / "compiled"
        compiled_dir.mkdir(exist_ok=True)
        report = compile_in_a_process(models[0], shapes, compiled_dir / "model.pt")
        target = job.output_config.get("TargetDevice") or "-".join(
            str(v) for v in (job.output_config.get("TargetPlatform") or {}).values()
        )
        report.update({"framework": framework, "target": target, "source": config["S3Uri"]})
        (compiled_dir / "compilation.json").write_text(json.dumps(report, indent=2))
        base = Path(config["S3Uri"]).name.removesuffix(".tar.gz")
        archive = self.work / f"{base}-{target}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            for path in sorted(compiled_dir.iterdir()):
                tar.add(path, arcname=path.name)
        destination = f"{job.output_config['S3OutputLocation'].rstrip('/')}/{archive.name}"
        s3io.upload_file(s3, archive, destination)
        job.model_artifacts = {"S3ModelArtifacts": destination}
        job.derived_information = {"DerivedDataInputConfig": json.dumps(shapes)}
        job.compilation_report = report


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
