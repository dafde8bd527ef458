"""How an mlscale operator decides to defer."""

from __future__ import annotations

import os

from mlscale.specs.coerce import convert


def default_deferrable() -> bool:
    """Deferrable unless `[operators] default_deferrable` is set explicitly.

    Stages wait for minutes to hours, so mlscale defers by default; Airflow's
    own default for that option is False, so only a value a user set counts.
    """
    from airflow.sdk.configuration import conf

    explicit = os.environ.get("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE")
    if explicit is None and conf.has_option("operators", "default_deferrable"):
        value = conf.get("operators", "default_deferrable")
        if value != conf.get_default_value("operators", "default_deferrable"):
            explicit = value
    return True if explicit is None else convert(explicit, bool, "[operators] default_deferrable")
