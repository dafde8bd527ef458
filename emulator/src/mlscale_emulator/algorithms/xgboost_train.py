"""The built-in XGBoost algorithm's training, as its container runs it in algorithm mode.

Run by the emulator as a training job's process, with the training contract's files and variables
(https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-running-container.html):
- hyperparameters.json: the container's hyperparameters, validated as the container validates them (its
  messages: "Missing required hyperparameter: num_round", "Extraneous hyperparameter found: ...");
- the train channel (and validation, if given): libsvm (the container's default) or CSV with the label in
  the first column and no header, as inputdataconfig.json's ContentType says
  (https://docs.aws.amazon.com/sagemaker/latest/dg/xgboost.html#InputOutput-XGBoost);
- each round's evaluation printed as the container prints it, which the algorithm's metric definitions read;
- the model saved as /opt/ml/model/xgboost-model (XGBoost's JSON format), which the XGBoost model server loads;
- CheckpointConfig: a checkpoint a round in /opt/ml/checkpoints, resumed from after a Spot interruption;
- several instances train one model over XGBoost's collective (its Rabit tracker on the first host), each on
  its own share of the data, as the container does.
A user error fails the job with "ClientError: <message>", an XGBoost error with "AlgorithmError: <message>".
"""

import glob
import json
import os
import sys

BASE = os.environ.get("SAGEMAKER_BASE_DIR", "/opt/ml")
CONFIG = os.path.join(BASE, "input", "config")
CHECKPOINTS = os.path.join(BASE, "checkpoints")
KEEP_CHECKPOINTS = 5


class UserError(Exception):
    """The job's configuration or data is wrong: "ClientError"."""


class AlgorithmFailure(Exception):
    """XGBoost itself failed: "AlgorithmError"."""


def _number(low=None, high=None, low_open=False, high_open=False, kind=float):
    def parse(name, raw):
        try:
            value = kind(raw)
        except ValueError:
            raise UserError(f"Hyperparameter {name}: could not parse value") from None
        if (low is not None and (value < low or (low_open and value == low))) or (
            high is not None and (value > high or (high_open and value == high))
        ):
            interval = (
                f"{'(' if low_open else '['}{low if low is not None else '-inf'}, "
                f"{high if high is not None else '+inf'}{')' if high_open else ']'}"
            )
            raise UserError(f"Hyperparameter {name}: {value} is not in {interval}")
        return value

    return parse


def _choice(*values):
    def parse(name, raw):
        if raw not in values:
            raise UserError(f"Hyperparameter {name}: {raw} is not in {list(values)}")
        return raw

    return parse


def _text(name, raw):
    return raw


OBJECTIVES = (
    "reg:squarederror",
    "reg:squaredlogerror",
    "reg:logistic",
    "reg:pseudohubererror",
    "reg:absoluteerror",
    "reg:quantileerror",
    "reg:tweedie",
    "reg:gamma",
    "binary:logistic",
    "binary:logitraw",
    "binary:hinge",
    "count:poisson",
    "survival:cox",
    "survival:aft",
    "multi:softmax",
    "multi:softprob",
    "rank:pairwise",
    "rank:ndcg",
    "rank:map",
    "reg:linear",
)
METRICS = (
    "rmse",
    "rmsle",
    "mae",
    "mape",
    "mphe",
    "logloss",
    "error",
    "merror",
    "mlogloss",
    "auc",
    "aucpr",
    "ndcg",
    "map",
    "poisson-nloglik",
    "gamma-nloglik",
    "cox-nloglik",
    "gamma-deviance",
    "tweedie-nloglik",
    "aft-nloglik",
    "interval-regression-accuracy",
)
INTEGER, UNIT = dict(kind=int), dict(low=0, high=1)
# https://docs.aws.amazon.com/sagemaker/latest/dg/xgboost_hyperparameters.html
HYPERPARAMETERS = {
    "num_round": _number(1, **INTEGER),
    "num_class": _number(2, **INTEGER),
    "alpha": _number(0),
    "base_score": _number(),
    "booster": _choice("gbtree", "gblinear", "dart"),
    "colsample_bylevel": _number(0, 1, low_open=True),
    "colsample_bynode": _number(0, 1, low_open=True),
    "colsample_bytree": _number(0, 1, low_open=True),
    "csv_weights": _choice("0", "1"),
    "deterministic_histogram": _choice("true", "false"),
    "early_stopping_rounds": _number(1, **INTEGER),
    "eta": _number(**UNIT),
    "eval_metric": _text,
    "gamma": _number(0),
    "grow_policy": _choice("depthwise", "lossguide"),
    "interaction_constraints": _text,
    "lambda": _number(0),
    "lambda_bias": _number(**UNIT),
    "max_bin": _number(2, **INTEGER),
    "max_delta_step": _number(0),
    "max_depth": _number(0, **INTEGER),
    "max_leaves": _number(0, **INTEGER),
    "min_child_weight": _number(0),
    "monotone_constraints": _text,
    "normalize_type": _choice("tree", "forest"),
    "nthread": _number(1, **INTEGER),
    "num_parallel_tree": _number(1, **INTEGER),
    "objective": _choice(*OBJECTIVES),
    "one_drop": _choice("0", "1"),
    "process_type": _choice("default", "update"),
    "rate_drop": _number(**UNIT),
    "refresh_leaf": _choice("0", "1"),
    "sample_type": _choice("uniform", "weighted"),
    "sampling_method": _choice("uniform", "gradient_based"),
    "save_model_on_termination": _choice("true", "false"),
    "scale_pos_weight": _number(0, low_open=True),
    "seed": _number(**INTEGER),
    "single_precision_histogram": _choice("true", "false"),
    "sketch_eps": _number(0, 1, low_open=True, high_open=True),
    "skip_drop": _number(**UNIT),
    "subsample": _number(0, 1, low_open=True),
    "tree_method": _choice("auto", "exact", "approx", "hist", "gpu_hist"),
    "tweedie_variance_power": _number(1, 2, low_open=True, high_open=True),
    "updater": _text,
    "verbosity": _number(0, 3, **INTEGER),
    "huber_slope": _number(),
    "max_cat_to_onehot": _number(1, **INTEGER),
    "aft_loss_distribution": _choice("normal", "logistic", "extreme"),
    "aft_loss_distribution_scale": _number(0),
    "_tuning_objective_metric": _text,
}
# hyperparameters of the container's own, not XGBoost's
CONTAINER_ONLY = (
    "num_round",
    "early_stopping_rounds",
    "csv_weights",
    "save_model_on_termination",
    "_tuning_objective_metric",
)


def validated(raw: dict) -> dict:
    """The hyperparameters, parsed; the first broken rule raises UserError in the container's words."""
    if "num_round" not in raw:
        raise UserError("Missing required hyperparameter: num_round")
    values = {}
    for name, value in raw.items():
        if name not in HYPERPARAMETERS:
            raise UserError(f"Extraneous hyperparameter found: {name}")
        values[name] = HYPERPARAMETERS[name](name, _plain(value))
    if values.get("objective") in ("multi:softmax", "multi:softprob") and "num_class" not in values:
        raise UserError(f"Require input for parameter num_class for {values['objective']}")
    for metric in (values.get("eval_metric") or "").split(","):
        if metric and metric.split("@")[0] not in METRICS:
            raise UserError(f"Hyperparameter eval_metric: value {metric} not in range {list(METRICS)}")
    return values


def _plain(value) -> str:
    """A value as text: the SDK may send it JSON-encoded ('"multi:softmax"'), which the container decodes."""
    try:
        decoded = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return str(value)
    return decoded if isinstance(decoded, str) else str(value)


def content_type(data_config: dict, channel: str) -> str:
    given = (data_config.get(channel) or {}).get("ContentType")
    kind = (given or "libsvm").split(";")[0].strip().lower()
    if kind in ("libsvm", "text/libsvm", "text/x-libsvm"):
        return "libsvm"
    if kind in ("csv", "text/csv"):
        return "csv"
    raise UserError(
        f"Content type {given} is not supported on the emulator: use text/csv or text/libsvm "
        "(parquet and recordio-protobuf are not emulated)"
    )


def data_files(channel: str) -> list:
    folder = os.path.join(BASE, "input", "data", channel)
    files = sorted(
        p
        for p in glob.glob(os.path.join(folder, "**", "*"), recursive=True)
        if os.path.isfile(p) and not os.path.basename(p).startswith(".")
    )
    return [p for p in files if os.path.getsize(p) > 0]


def load(channel: str, kind: str, csv_weights: bool):
    """The channel's files as one DMatrix, or None when the channel has no data."""
    import numpy as np
    import xgboost as xgb

    files = data_files(channel)
    if not files:
        return None
    if kind == "csv":
        try:
            rows = np.vstack([np.loadtxt(p, delimiter=",", ndmin=2) for p in files])
        except ValueError as error:
            raise UserError(
                f"Loading csv data failed with Exception, please ensure data is in csv format: {error}"
            ) from None
        first = 2 if csv_weights else 1
        return xgb.DMatrix(rows[:, first:], label=rows[:, 0], weight=rows[:, 1] if csv_weights else None)
    import scipy.sparse
    from sklearn.datasets import load_svmlight_file

    try:
        parts = [load_svmlight_file(p, zero_based=True) for p in files]
    except ValueError as error:
        raise UserError(
            f"Loading libsvm data failed with Exception, please ensure data is in libsvm format: {error}"
        ) from None
    width = max(x.shape[1] for x, _ in parts)
    features = scipy.sparse.vstack(
        [scipy.sparse.csr_matrix((x.data, x.indices, x.indptr), shape=(x.shape[0], width)) for x, _ in parts]
    )
    return xgb.DMatrix(features, label=np.concatenate([y for _, y in parts]))


def latest_checkpoint():
    """(path, rounds done) of the newest checkpoint, or (None, 0)."""
    saved = _checkpoints()
    if not saved:
        return None, 0
    rounds, name = max(saved)
    return os.path.join(CHECKPOINTS, name), rounds + 1


def callbacks(start: int, is_master: bool):
    import xgboost as xgb

    class PrintRound(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            results = "".join(
                f"#011{data}-{metric}:{values[-1]:.5f}"
                for data, metrics in evals_log.items()
                for metric, values in metrics.items()
            )
            print(f"[{start + epoch}]{results}", flush=True)
            return False

    class Checkpoint(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            path = os.path.join(CHECKPOINTS, f"xgboost-checkpoint.{start + epoch}")
            with open(path + ".partial", "wb") as handle:
                handle.write(model.save_raw("json"))
            os.replace(path + ".partial", path)
            for old, _ in sorted(_checkpoints())[:-KEEP_CHECKPOINTS]:
                os.remove(os.path.join(CHECKPOINTS, f"xgboost-checkpoint.{old}"))
            return False

    chosen = [PrintRound()] if is_master else []
    if is_master and os.path.isdir(CHECKPOINTS):
        chosen.append(Checkpoint())
    return chosen


def _checkpoints():
    if not os.path.isdir(CHECKPOINTS):
        return []
    return [
        (int(n.rsplit(".", 1)[1]), n)
        for n in os.listdir(CHECKPOINTS)
        if n.startswith("xgboost-checkpoint.") and n.rsplit(".", 1)[1].isdigit()
    ]


def train(values: dict, data_config: dict, hosts: list, current_host: str) -> None:
    import xgboost as xgb

    kind = content_type(data_config, "train")
    train_data = load("train", kind, values.get("csv_weights") == "1")
    validation = (
        load("validation", content_type(data_config, "validation"), False) if "validation" in data_config else None
    )
    if train_data is None:  # on any host: every instance trains on its share
        raise UserError(f"No data in training channel path {os.path.join(BASE, 'input', 'data', 'train')}")
    if "validation" in data_config and validation is None:
        raise UserError(f"No data in validation channel path {os.path.join(BASE, 'input', 'data', 'validation')}")
    params = {k: v for k, v in values.items() if k not in CONTAINER_ONLY}
    if params.get("eval_metric"):
        params["eval_metric"] = params["eval_metric"].split(",")
    params.setdefault("nthread", int(os.environ.get("OMP_NUM_THREADS", "1")))
    is_master = current_host == hosts[0]
    previous, done = latest_checkpoint()
    if previous:
        print(f"Checkpoint loaded from {previous}; resuming from iteration {done}", flush=True)
    evals = [(train_data, "train")] + ([(validation, "validation")] if validation is not None else [])
    print(f"Train matrix has {train_data.num_row()} rows and {train_data.num_col()} columns", flush=True)
    try:
        booster = xgb.train(
            params,
            train_data,
            num_boost_round=max(0, values["num_round"] - done),
            evals=evals,
            early_stopping_rounds=values.get("early_stopping_rounds") if validation else None,
            xgb_model=previous,
            callbacks=callbacks(done, is_master),
            verbose_eval=False,
        )
    except xgb.core.XGBoostError as error:
        raise AlgorithmFailure(f"XGB train call failed with exception:\n {error}") from None
    if is_master:
        model_dir = os.path.join(BASE, "model")
        os.makedirs(model_dir, exist_ok=True)
        with open(os.path.join(model_dir, "xgboost-model"), "wb") as handle:
            handle.write(booster.save_raw("json"))


def distributed(hosts: list, current_host: str, run) -> None:
    """Run `run` inside XGBoost's collective: the first host keeps the tracker, every host joins it."""
    import xgboost as xgb
    from xgboost.tracker import RabitTracker

    port = int(os.environ["MASTER_PORT"])
    tracker = None
    if current_host == hosts[0]:
        tracker = RabitTracker(n_workers=len(hosts), host_ip="127.0.0.1", port=port, timeout=300)
        tracker.start()
    args = {
        "dmlc_tracker_uri": "127.0.0.1",
        "dmlc_tracker_port": port,
        "dmlc_task_id": current_host,
        "dmlc_retry": 30,
        "dmlc_timeout": 300,
    }
    with xgb.collective.CommunicatorContext(**args):
        run()
    if tracker is not None:
        tracker.wait_for()


def main() -> int:
    with open(os.path.join(CONFIG, "hyperparameters.json")) as handle:
        raw = json.load(handle)
    with open(os.path.join(CONFIG, "inputdataconfig.json")) as handle:
        data_config = json.load(handle)
    with open(os.path.join(CONFIG, "resourceconfig.json")) as handle:
        resources = json.load(handle)
    hosts, current = resources["hosts"], resources["current_host"]
    try:
        values = validated(raw)
        print("Running XGBoost Sagemaker in algorithm mode", flush=True)
        if len(hosts) > 1:
            distributed(hosts, current, lambda: train(values, data_config, hosts, current))
        else:
            train(values, data_config, hosts, current)
    except UserError as error:
        return fail(f"ClientError: {error}")
    except AlgorithmFailure as error:
        return fail(f"AlgorithmError: {error}")
    return 0


def fail(reason: str) -> int:
    print(reason, file=sys.stderr, flush=True)
    with open(os.path.join(BASE, "output", "failure"), "w") as handle:
        handle.write(reason)
    return 1


if __name__ == "__main__":
    sys.exit(main())
