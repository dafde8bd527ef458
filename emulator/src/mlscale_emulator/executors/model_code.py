"""Where a model server finds the model and its inference code: the one contract Batch Transform and real-time
endpoints share (https://docs.aws.amazon.com/sagemaker/latest/dg/adapt-inference-container.html).

The model is ModelDataUrl's archive, unpacked. The inference script is SAGEMAKER_PROGRAM, looked for in the
model's own code/ (a model.tar.gz with code/inference.py: PyTorch's layout), then in
SAGEMAKER_SUBMIT_DIRECTORY: the SageMaker Python SDK uploads the entry point's folder as an S3
sourcedir.tar.gz (`Model(entry_point=..., source_dir=...)`, `estimator.deploy()`), which is downloaded here;
a local folder (the SDK's local mode) is used as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlscale_emulator import confine
from mlscale_emulator.executors import s3io

MODEL_PREFIX = "/opt/ml/model/"  # a submit directory inside the container's model folder: the model's own code


def unpack(s3: Any, container: dict, root: Path) -> tuple[Path, Path | None]:
    """(the model folder, the code folder or None) for one model server instance under `root`; what is
    already there (an endpoint instance restarted) is not downloaded again."""
    model_dir = root / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    if container.get("ModelDataUrl") and not any(model_dir.iterdir()):
        s3io.download_and_extract(s3, container["ModelDataUrl"], model_dir)
    submit = (container.get("Environment") or {}).get("SAGEMAKER_SUBMIT_DIRECTORY", "")
    if submit.startswith("s3://"):
        code_dir = root / "code"
        code_dir.mkdir(exist_ok=True)
        if not any(code_dir.iterdir()):
            s3io.download_and_extract(s3, submit, code_dir)
        return model_dir, code_dir
    submit = submit.removeprefix("file://")
    if submit.startswith(MODEL_PREFIX):
        return model_dir, confine.within(model_dir, submit[len(MODEL_PREFIX) :])
    return model_dir, Path(submit) if submit and Path(submit).is_dir() else None
