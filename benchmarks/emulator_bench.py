"""Emulator overhead: a training job through the emulator against the same script run directly (and a
processing job and a Batch Transform: benchmarks/emulator_jobs_bench.py, on the same emulator).

The job: include/training/train.py on the digits data, 1 and 2 instances (DDP over gloo). Through the
emulator: CreateTrainingJob to the job's TrainingEndTime (data download, processes, log shipping, model upload
included: what a user waits for, less this bench's own polling interval). Directly: the same script under
torchrun on this machine, as many processes (a torchrun per instance with its worker, as SageMaker's toolkit runs
one on each instance), the same environment variables (SM_CHANNEL_*, SM_MODEL_DIR, OMP_NUM_THREADS) and the same
data already on disk. Rounds interleave the two sides.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EPOCHS = 3


def _emulator(home: Path):
    from mlscale_emulator.server import EmulatorServer
    from mlscale_emulator.settings import EmulatorSettings

    return EmulatorServer(EmulatorSettings(host="127.0.0.1", port=0, home=home)).start()


def _through_emulator(sagemaker, name: str, source: str, channels: dict, instances: int) -> float:
    from tests.conftest import training_request

    request = training_request(
        name, source, instance_count=instances, hyperparameters={"epochs": EPOCHS}, channels=channels, distributed=True
    )
    started = time.time()
    sagemaker.create_training_job(**request)
    while (job := sagemaker.describe_training_job(TrainingJobName=name))["TrainingJobStatus"] == "InProgress":
        time.sleep(0.1)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    return job["TrainingEndTime"].timestamp() - started  # the service's end, not the next poll of this loop


def _directly(work: Path, data: dict[str, Path], instances: int) -> float:
    """One torchrun per instance (its node rank) with one worker, rendezvousing at one port: the processes the
    emulator starts, without the emulator."""
    model = work / f"model-{instances}"
    model.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SM_"))}
    env.update(
        {
            "SM_MODEL_DIR": str(model),
            "SM_CHANNEL_TRAIN": str(data["train"]),
            "SM_CHANNEL_TEST": str(data["test"]),
            "SM_HOSTS": '["algo-1"]',
            "SM_CURRENT_HOST": "algo-1",
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // instances)),
        }
    )
    port = str(_free_port())
    commands = [
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            str(instances),
            "--nproc_per_node",
            "1",
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            port,
            "--node_rank",
            str(rank),
            "train.py",
            "--epochs",
            str(EPOCHS),
        ]
        for rank in range(instances)
    ]
    started = time.perf_counter()
    processes = [
        subprocess.Popen(
            command, cwd=REPO / "include" / "training", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        for command in commands
    ]
    for process in processes:
        _, stderr = process.communicate()
        assert process.returncode == 0, stderr.decode(errors="replace")[-2000:]
    return time.perf_counter() - started


def _free_port() -> int:
    from tests.conftest import free_port

    return free_port()


def figures(quick: bool = False) -> list:
    import boto3
    import numpy as np
    from goals import Figure, median, spread

    from mlscale_example.datasets.digits import digits_splits, stage_digits
    from tests.conftest import upload_source

    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    rounds = 1 if quick else 3
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server = _emulator(work / "emulator")
        try:

            def client(service):
                return boto3.client(
                    service,
                    endpoint_url=server.endpoint_url,
                    region_name="us-east-1",
                    aws_access_key_id="bench",
                    aws_secret_access_key="bench",
                )

            s3, sagemaker = client("s3"), client("sagemaker")
            sagemaker.list_training_jobs()  # a client's first call resolves its endpoint rules: not the emulator's time
            s3.create_bucket(Bucket="mlscale-test")
            channels = {
                name: uri
                for name, uri in stage_digits(s3, "mlscale-test", "bench/digits").items()
                if name in ("train", "test")
            }
            source = upload_source(
                s3,
                {f: (REPO / "include" / "training" / f).read_text() for f in ("train.py", "shard_loader.py")},
                "bench/sourcedir.tar.gz",
            )
            data = {}
            for split, arrays in digits_splits(7).items():  # the same arrays stage_digits wrote
                data[split] = work / "data" / split
                data[split].mkdir(parents=True)
                buffer = io.BytesIO()
                np.savez_compressed(buffer, **arrays)
                (data[split] / "digits.npz").write_bytes(buffer.getvalue())
            for instances in (1, 2):
                emulated, direct = [], []
                for round_ in range(rounds):
                    emulated.append(
                        _through_emulator(sagemaker, f"bench-{instances}-{round_}", source, channels, instances)
                    )
                    direct.append(_directly(work, data, instances))
                results.append(
                    Figure(
                        f"emulator_overhead_training_{instances}_instance{'s' if instances > 1 else ''}",
                        median(emulated),
                        median(direct),
                        "<= 1.1",
                        "s",
                        f"train.py, {EPOCHS} epochs; emulator {spread(emulated)}; direct {spread(direct)}",
                    )
                )
            import emulator_jobs_bench

            model = sagemaker.describe_training_job(TrainingJobName="bench-1-0")["ModelArtifacts"]["S3ModelArtifacts"]
            results += emulator_jobs_bench.figures(s3, sagemaker, work, model, rounds, 1000 if quick else 10_000)
        finally:
            server.stop()
    return results


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "benchmarks"))
    sys.path.insert(0, str(REPO))
    for figure in figures(quick="--quick" in sys.argv):
        print(figure.line())
