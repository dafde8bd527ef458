"""mlscale's settings: the `[mlscale]` section of Airflow's configuration, declared in the provider info.

Set them as any Airflow option: in airflow.cfg, or `AIRFLOW__MLSCALE__CACHE_LOCATION=...`; read them with
`airflow config get-value mlscale cache_location`. A project keeps its own settings in a section of its own,
read the same way with `read_option` and checked with the rules here (the example project: [mlscale_example]).
"""

from __future__ import annotations

# Each option: (default, description). The provider info turns this table into Airflow's config schema.
OPTIONS: dict[str, tuple[str, str]] = {
    "first_event_delay": (
        "15",
        "Seconds a stage trigger holds its first event after it starts. Airflow 3.3 can fail a "
        "resumed task whose trigger fired within seconds of its deferral (apache/airflow#72716); "
        "jobs on AWS take minutes, so the hold rarely costs. `mlscale airflow` sets 0: its "
        "scheduler carries the fix.",
    ),
    "cache_location": (
        "",
        "The s3:// prefix of the stage cache's entries (one JSON object per stage fingerprint), for stages whose "
        "CacheConfig names no `location`; with neither, a stage with the cache on fails before any AWS call.",
    ),
}


def config_schema() -> dict:
    """The provider info's `config` entry."""
    return {
        "mlscale": {
            "description": "Settings of the mlscale provider.",
            "options": {
                name: {
                    "description": text,
                    "version_added": "0.2.0",
                    "type": "string",
                    "example": None,
                    "default": default,
                }
                for name, (default, text) in OPTIONS.items()
            },
        }
    }


class SettingError(ValueError):
    """An option's value breaks its rule; the message names the section, the option and the rule."""


def read_option(section: str, name: str, options: dict, rules: dict) -> str:
    """The option's value (Airflow's config, its AIRFLOW__<SECTION>__<NAME> variable, or the default), checked."""
    from airflow.configuration import conf

    value = conf.get(section, name, fallback=options[name][0])
    rule = rules.get(name)
    if rule is not None and (broken := rule(value)):
        variable = f"AIRFLOW__{section.upper()}__{name.upper()}"
        raise SettingError(f"[{section}] {name} = {value!r}: {broken} (set it in airflow.cfg or {variable})")
    return value


def setting(name: str) -> str:
    """An `[mlscale]` option's value, checked."""
    return read_option("mlscale", name, OPTIONS, RULES)


def bucket_rule(value: str) -> str | None:
    from mlscale.specs.rules import valid_bucket

    return (
        None
        if valid_bucket(value)
        else "must be an S3 bucket name: 3-63 lowercase letters, digits, '.' and '-', no '..', not an IP address"
    )


def role_arn_rule(value: str) -> str | None:
    from mlscale.specs.rules import ROLE_ARN

    return None if ROLE_ARN.match(value) else "must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)"


def seconds_rule(value: str) -> str | None:
    try:
        number = float(value)
    except ValueError:
        return "must be a number of seconds"
    return None if 0 <= number < float("inf") else "must be a number of seconds, 0 or more"


def poll_interval_rule(value: str) -> str | None:
    return (
        None
        if value.strip().isdigit() and 1 <= int(value) <= 300
        else "must be a whole number of seconds from 1 to 300"
    )


def json_object_rule(value: str) -> str | None:
    import json

    try:
        parsed = json.loads(value)
    except ValueError as error:
        return f"must be a JSON object: {error}"
    return None if isinstance(parsed, dict) else "must be a JSON object"


def optional_s3_uri_rule(value: str) -> str | None:
    if not value:
        return None
    return (
        None
        if value.startswith("s3://") and not bucket_rule(value[5:].split("/", 1)[0])
        else "must be empty or an s3://bucket/prefix URI"
    )


RULES = {"first_event_delay": seconds_rule, "cache_location": optional_s3_uri_rule}
