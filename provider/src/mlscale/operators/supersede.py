"""Deploys of several runs to one target: the model of newer data wins, an older one is skipped as superseded.

Each deploy tags what it ships with its `model_version` (any string that sorts by age; the example DAG
uses `<training window end>/<run_after>`, so newer data wins and, for the same data, the later run).
"""

from __future__ import annotations

from airflow.sdk.exceptions import AirflowSkipException

MODEL_VERSION_TAG = "mlscale:model-version"


def skip_if_superseded(ours: str | None, serving: str | None, target: str) -> None:
    """Raise AirflowSkipException when the target already has a newer model than ours."""
    if ours and serving and serving > ours:
        raise AirflowSkipException(
            f"Superseded: {target} already has model version {serving}, newer than this "
            f"run's {ours}; not deploying the older model"
        )
