"""The inference toolkit's handler chain: the user's model_fn/input_fn/predict_fn/output_fn or transform_fn,
else the defaults of the framework the container image is for:

- PyTorch (sagemaker-pytorch-inference-toolkit): a TorchScript model.pt; JSON, CSV and NPY in as a tensor;
  `model(data)` under no_grad.
- scikit-learn (sagemaker-scikit-learn-container): the script must define model_fn (the container has
  no default); JSON, CSV and NPY in as a NumPy array; `model.predict(data)`.
- XGBoost (sagemaker-xgboost-container): the `xgboost-model` file (a saved Booster, or a pickled one);
  CSV (no header), LibSVM, JSON and NPY in as a DMatrix; `booster.predict(dmatrix)`.
All answer JSON, CSV or NPY by the Accept header."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import sys
from pathlib import Path
from types import ModuleType

JSON, CSV, NPY = "application/json", "text/csv", "application/x-npy"


class HandlerError(Exception):
    """An error with the HTTP status the toolkit answers with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def load_user_module(model_dir: Path, code_dir: Path | None, program: str) -> ModuleType | None:
    """The user's inference script: model_dir/code/<program> (PyTorch) or the submit directory's."""
    for folder in (model_dir / "code", code_dir):
        if folder and (folder / program).is_file():
            sys.path.insert(0, str(folder))
            spec = importlib.util.spec_from_file_location(Path(program).stem, folder / program)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    return None


def default_model_fn(model_dir: str):
    import torch

    candidates = [p for p in Path(model_dir).iterdir() if p.suffix in (".pt", ".pth")]
    chosen = Path(model_dir) / "model.pt" if (Path(model_dir) / "model.pt").exists() else None
    if chosen is None and len(candidates) == 1:
        chosen = candidates[0]
    if chosen is None:
        raise ValueError(
            f"no model_fn and no single TorchScript model (model.pt) in {model_dir}: "
            f"found {[p.name for p in candidates]}"
        )
    return torch.jit.load(str(chosen), map_location="cpu")


def default_input_fn(body: bytes | str, content_type: str):
    import numpy as np
    import torch

    content_type = (content_type or "").split(";")[0].strip()
    text = body.decode() if isinstance(body, bytes) and content_type in (JSON, CSV) else body
    if content_type == JSON:
        return torch.FloatTensor(np.asarray(json.loads(text), dtype=np.float32))
    if content_type == CSV:
        return torch.FloatTensor(np.loadtxt(io.StringIO(text), delimiter=",", ndmin=2, dtype=np.float32))
    if content_type == NPY:
        return torch.from_numpy(np.load(io.BytesIO(body), allow_pickle=False))
    raise HandlerError(
        415, f"Content type {content_type or '(none)'} is not supported by this framework: use {JSON}, {CSV} or {NPY}"
    )


def default_predict_fn(data, model):
    import torch

    model.eval()
    with torch.no_grad():
        return model(data)


def numpy_input_fn(body: bytes | str, content_type: str):
    """The scikit-learn container's decoders: JSON, CSV and NPY to a NumPy array."""
    import numpy as np

    content_type = (content_type or "").split(";")[0].strip()
    if content_type == JSON:
        return np.asarray(json.loads(body))
    if content_type == CSV:
        return np.loadtxt(io.StringIO(body if isinstance(body, str) else body.decode()), delimiter=",", ndmin=2)
    if content_type == NPY:
        return np.load(io.BytesIO(body), allow_pickle=False)
    raise HandlerError(
        415, f"Content type {content_type or '(none)'} is not supported by this framework: use {JSON}, {CSV} or {NPY}"
    )


def sklearn_model_fn(model_dir: str):
    raise ValueError(
        "the scikit-learn container has no default model_fn: the inference script must define "
        f"model_fn(model_dir) (it found none for {model_dir})"
    )


def sklearn_predict_fn(data, model):
    return model.predict(data)


LIBSVM = ("text/libsvm", "text/x-libsvm")


def xgboost_model_fn(model_dir: str):
    """As the XGBoost container loads `xgboost-model`: XGBoost's own format, else a pickled Booster."""
    import pickle

    import xgboost

    path = Path(model_dir) / "xgboost-model"
    if not path.is_file():
        raise ValueError(
            f"no model_fn and no xgboost-model file in {model_dir}: found "
            f"{sorted(p.name for p in Path(model_dir).iterdir())}"
        )
    booster = xgboost.Booster()
    try:
        booster.load_model(str(path))
    except xgboost.core.XGBoostError:
        with open(path, "rb") as handle:
            booster = pickle.load(handle)
    return booster


def xgboost_input_fn(body: bytes | str, content_type: str):
    """The XGBoost container's decoders: CSV and LibSVM (its defaults), JSON and NPY, to a DMatrix."""
    import xgboost

    kind = (content_type or "").split(";")[0].strip()
    if kind in LIBSVM:
        return _libsvm_matrix(body if isinstance(body, str) else body.decode())
    return xgboost.DMatrix(numpy_input_fn(body, content_type))


def _libsvm_matrix(text: str):
    """`label index:value ...` rows (the label is ignored at inference) as a sparse DMatrix."""
    import scipy.sparse
    import xgboost

    rows, columns, values = [], [], []
    for row, line in enumerate(line for line in text.splitlines() if line.strip()):
        for pair in line.split()[1:]:
            index, value = pair.split(":")
            rows.append(row)
            columns.append(int(index))
            values.append(float(value))
    return xgboost.DMatrix(scipy.sparse.csr_matrix((values, (rows, columns))))


def xgboost_predict_fn(data, model):
    booster = model.get_booster() if hasattr(model, "get_booster") else model  # an XGBClassifier from model_fn
    return booster.predict(data)


# framework -> (model_fn, input_fn, predict_fn): each toolkit's defaults (output_fn is the same in all)
DEFAULTS = {
    "pytorch": (default_model_fn, default_input_fn, default_predict_fn),
    "sklearn": (sklearn_model_fn, numpy_input_fn, sklearn_predict_fn),
    "xgboost": (xgboost_model_fn, xgboost_input_fn, xgboost_predict_fn),
}


def framework_of(image: str) -> str:
    """Which framework an image is for, by its repository name (AWS's Deep Learning Containers and the
    SageMaker framework images name it: pytorch-inference, sagemaker-scikit-learn, ...)."""
    repository = image.rsplit("/", 1)[-1].split(":")[0].lower()
    if "scikit-learn" in repository or "sklearn" in repository:
        return "sklearn"
    if "xgboost" in repository:
        return "xgboost"
    return "pytorch"


def default_output_fn(prediction, accept: str):
    import numpy as np

    array = prediction.detach().cpu().numpy() if hasattr(prediction, "detach") else np.asarray(prediction)
    for kind in [a.split(";")[0].strip() for a in (accept or JSON).split(",")]:
        if kind in (JSON, "*/*"):
            return json.dumps(array.tolist()), JSON
        if kind == CSV:
            buffer = io.StringIO()
            np.savetxt(buffer, np.atleast_2d(array), delimiter=",", fmt="%.6g")
            return buffer.getvalue().rstrip("\n"), CSV
        if kind == NPY:
            buffer = io.BytesIO()
            np.save(buffer, array)
            return buffer.getvalue(), NPY
    raise HandlerError(406, f"Accept {accept} is not supported: use {JSON}, {CSV} or {NPY}")


class HandlerChain:
    def __init__(self, model_dir: Path, code_dir: Path | None, program: str, framework: str = "pytorch"):
        module = load_user_module(model_dir, code_dir, program)
        pick = lambda name, default: getattr(module, name, None) or default  # noqa: E731
        model_fn, input_fn, predict_fn = DEFAULTS[framework]
        self.transform_fn = getattr(module, "transform_fn", None)
        if self.transform_fn and any(hasattr(module, n) for n in ("input_fn", "predict_fn", "output_fn")):
            raise ValueError("transform_fn cannot be combined with input_fn, predict_fn or output_fn")
        self.input_fn = pick("input_fn", input_fn)
        self.predict_fn = pick("predict_fn", predict_fn)
        self.output_fn = pick("output_fn", default_output_fn)
        self.model = pick("model_fn", model_fn)(str(model_dir))

    def __call__(self, body: bytes, content_type: str, accept: str):
        if self.transform_fn:
            result = self.transform_fn(self.model, _decoded(body, content_type), content_type, accept)
        else:
            data = self.input_fn(_decoded(body, content_type), content_type)
            result = self.output_fn(self.predict_fn(data, self.model), accept)
        body, kind = result if isinstance(result, tuple) else (result, accept)
        return (body.encode() if isinstance(body, str) else body), kind


def _decoded(body: bytes, content_type: str):
    """JSON and CSV bodies reach the handlers as UTF-8 strings, as the toolkit passes them."""
    kind = (content_type or "").split(";")[0].strip()
    return body.decode() if kind in (JSON, CSV) else body


def default_accept(framework: str = "pytorch") -> str:
    """The answer's type when the caller accepts anything: the XGBoost container answers CSV (its built-in
    algorithm's only answer once), the others JSON; SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT overrides both."""
    return os.environ.get("SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT", CSV if framework == "xgboost" else JSON)
