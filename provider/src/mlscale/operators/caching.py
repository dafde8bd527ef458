"""The stage cache, as StageOperator uses it: fingerprint a stage, reuse the latest successful job that had the
same fingerprint (within the expiry), record a success.

A stage that can be cached says what decides its output (`cache_parts`); the fingerprint is computed for
every run of it, cache on or off, so it shows in the log, the XCom and as a tag on the job. With
`cache=CacheConfig(enabled=True)` a hit returns the recorded job's result and launches nothing.
Deployment stages say nothing (`cache_stage = None`) and are never cached.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlscale.aws.stage_cache import (
    age,
    fingerprint,
    read_entry,
    s3_identity,
    with_placeholders,
    write_entry,
)

if TYPE_CHECKING:
    from mlscale.specs.cache import CacheConfig

IGNORED = "(ignored)"
# Part of every fingerprint: bumped when a stage's result (what an entry replays) changes shape, so entries
# that older mlscale versions recorded are not replayed to DAGs that expect the new keys
RESULT_FORMAT = 1


@dataclass
class CacheParts:
    """What decides a stage's output. URIs of `inputs` and `outputs` become placeholders in `request`
    (`<input:train>`, `<output:shards>`): where the data lives is not what it is."""

    request: dict[str, Any]  # the request the stage sends, its job name "<job>"
    inputs: dict[str, str | list[str]]  # name -> the s3:// prefix(es) it reads; their objects are hashed
    outputs: dict[str, str] = field(default_factory=dict)  # name -> the s3:// prefix it writes (run-specific)
    extras: dict[str, Any | Callable[[], Any]] = field(default_factory=dict)  # code hash, image; callables: lazy

    def names(self) -> tuple[str, ...]:
        """What `ignored_inputs` may name."""
        return (*self.inputs, *self.extras)


def default_location() -> str:
    """`[mlscale] cache_location` (CacheConfig.validate has checked that it is set when a stage names none)."""
    from mlscale.settings import setting

    return setting("cache_location")


def compute(stage: str, parts: CacheParts, config: CacheConfig | None, s3_client: Any) -> tuple[str, dict]:
    """The fingerprint, and the inputs' identities (for the log)."""
    ignored = set(config.ignored_inputs) if config else set()
    version = config.version if config else "1"
    placeholders: dict[str, str] = {}
    for name, uris in parts.inputs.items():
        for uri in [uris] if isinstance(uris, str) else uris:
            placeholders[uri] = f"<input:{name}>"
    placeholders.update({uri: f"<output:{name}>" for name, uri in parts.outputs.items()})
    # an image named in the request as well as among the extras: ignoring it must leave the request alike
    placeholders.update(
        {value: f"<{name}>" for name, value in parts.extras.items() if isinstance(value, str) and len(value) >= 8}
    )
    identities = {
        name: IGNORED if name in ignored else s3_identity(s3_client, uris) for name, uris in parts.inputs.items()
    }
    extras = {
        name: IGNORED if name in ignored else (value() if callable(value) else value)
        for name, value in parts.extras.items()
    }
    body = {
        "request": with_placeholders(parts.request, placeholders),
        "inputs": identities,
        **extras,
        "result_format": RESULT_FORMAT,
    }
    return fingerprint(stage, version, body), identities


def reuse(operator: Any, context: Any, key: str, config: CacheConfig) -> dict[str, Any] | None:
    """The recorded result for this fingerprint, when it may be reused; None (and why, in the log) otherwise."""
    log, stage = operator.log, operator.cache_stage
    location = config.location or default_location()
    entry = read_entry(operator.s3_hook(), location, stage, key)
    if entry is None:
        log.info("Stage cache: no earlier successful %s with fingerprint %s; running it.", operator.cache_noun, key)
        return None
    expiry = config.expiry()
    if expiry is not None and age(entry) > expiry.total_seconds():
        log.info(
            "Stage cache: %s from run %s is older than expire_after %s; running again.",
            entry["job"],
            entry["run_id"],
            config.expire_after,
        )
        return None
    why_not = operator.cache_reusable(entry)
    if why_not:
        log.info(
            "Stage cache: %s from run %s cannot be reused (%s); running again.", entry["job"], entry["run_id"], why_not
        )
        return None
    log.info(
        "Stage cache hit: reused %s %s from run %s (%s, recorded %s); launching nothing.",
        operator.cache_noun,
        entry["job"],
        entry["run_id"],
        entry["dag_id"],
        entry["recorded_at"],
    )
    operator.reusing(context, entry)
    cache = {
        "hit": True,
        "enabled": True,
        "reused": entry["job"],
        "from_run": entry["run_id"],
        "from_dag": entry["dag_id"],
        "recorded_at": entry["recorded_at"],
    }
    return {**entry["result"], "fingerprint": key, "cache": cache}


def record(operator: Any, context: Any, key: str, config: CacheConfig | None, result: dict[str, Any]) -> dict:
    """The result with its fingerprint; with the cache on, also recorded as the latest success."""
    enabled = bool(config and config.enabled)
    if enabled:
        ti = context["ti"]
        job = str(result.get(operator.cache_job_key))
        uri = write_entry(
            operator.s3_hook(),
            config.location or default_location(),
            operator.cache_stage,
            key,
            job=job,
            dag_id=ti.dag_id,
            run_id=ti.run_id,
            task_id=ti.task_id,
            result=result,
        )
        operator.log.info("Stage cache: recorded %s %s under fingerprint %s (%s).", operator.cache_noun, job, key, uri)
    return {**result, "fingerprint": key, "cache": {"hit": False, "enabled": enabled}}


def s3_uris_in(result: dict[str, Any]) -> list[str]:
    """The s3:// values of a result (top level and one level down): the outputs a reused job must still have."""
    found = []
    for value in result.values():
        values = value.values() if isinstance(value, dict) else [value]
        found.extend(v for v in values if isinstance(v, str) and v.startswith("s3://"))
    return found


def missing_outputs(s3_client: Any, uris: list[str]) -> list[str]:
    """The URIs with no object under them (deleted since: the job's outputs are gone)."""
    missing = []
    for uri in uris:
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        if not s3_client.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1).get("KeyCount"):
            missing.append(uri)
    return missing
