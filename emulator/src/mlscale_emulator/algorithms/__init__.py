"""SageMaker's built-in algorithms: which images name one, which the emulator runs, and how.

A built-in algorithm runs from its image alone: no training script (no sagemaker_program hyperparameter or
SAGEMAKER_PROGRAM). The XGBoost image runs either way: with a script it is a framework image (script mode),
without one it is the algorithm (https://docs.aws.amazon.com/sagemaker/latest/dg/xgboost.html). The other
first-party algorithm images (the repositories of
https://docs.aws.amazon.com/sagemaker/latest/dg-ecr-paths/sagemaker-algo-docker-registry-paths.html) are
refused when the job is created, naming what the emulator does run, rather than failing once data is staged.
"""

from __future__ import annotations

from pathlib import Path

ALGORITHMS_DIR = Path(__file__).resolve().parent
# built-in algorithm -> the script that plays its container's training entry point
RUNS = {"xgboost": ALGORITHMS_DIR / "xgboost_train.py"}
# first-party algorithm repositories the emulator does not run
NOT_RUN = frozenset(
    {
        "blazingtext",
        "factorization-machines",
        "forecasting-deepar",
        "image-classification",
        "ipinsights",
        "kmeans",
        "knn",
        "lda",
        "linear-learner",
        "ntm",
        "object-detection",
        "object2vec",
        "pca",
        "randomcutforest",
        "semantic-segmentation",
        "seq2seq",
    }
)
WHAT_RUNS = (
    "the emulator runs the built-in XGBoost algorithm (sagemaker-xgboost images with no training "
    "script) and training scripts in script mode with any framework image"
)

# The built-in XGBoost reports these per round ("[3]#011train-rmse:0.41#011validation-rmse:0.44", a tab as
# CloudWatch shows it), and SageMaker defines them for every job of the algorithm
# (https://docs.aws.amazon.com/sagemaker/latest/dg/xgboost-tuning.html).
XGBOOST_METRICS = (
    "accuracy",
    "auc",
    "aucpr",
    "error",
    "f1",
    "gamma-deviance",
    "gamma-nloglik",
    "logloss",
    "mae",
    "map",
    "mape",
    "merror",
    "mlogloss",
    "mse",
    "ndcg",
    "poisson-nloglik",
    "rmse",
    "rmsle",
    "tweedie-nloglik",
)


def repository(image: str) -> str:
    """An image URI's repository name: 683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-xgboost:1.7-1."""
    return image.rsplit("/", 1)[-1].split(":")[0].split("@")[0].lower()


def builtin(image: str, program: str | None) -> str | None:
    """The built-in algorithm a training job runs, or None when it runs a script (or a custom image)."""
    name = repository(image)
    if name == "sagemaker-xgboost" and not program:
        return "xgboost"
    return name if name in NOT_RUN else None


def refusal(image: str, program: str | None) -> str | None:
    """Why a training job's image cannot run here, or None."""
    algorithm = builtin(image, program)
    if algorithm is None or algorithm in RUNS:
        return None
    return f"the built-in algorithm image {image} ({algorithm}) does not run on the emulator: {WHAT_RUNS}"


def metric_definitions(algorithm: str) -> list[dict[str, str]]:
    """The metrics SageMaker defines for a built-in algorithm's training jobs."""
    if algorithm != "xgboost":
        return []
    number = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
    return [
        {"Name": f"{channel}:{metric}", "Regex": rf".*\[[0-9]+\].*#011{channel}-{metric}:{number}"}
        for channel in ("train", "validation")
        for metric in XGBOOST_METRICS
    ]
