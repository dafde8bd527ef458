"""CacheConfig: whether a stage may reuse an earlier job with the same fingerprint, and for how long.

Modelled on SageMaker Pipelines' step caching (CacheConfig(enable_caching, expire_after)): off by default;
on, a stage whose fingerprint matches the latest successful job within `expire_after` reuses that job's
outputs and launches nothing. `version` is part of the fingerprint: bump it to invalidate every entry;
`ignored_inputs` names inputs (or the stage's `code` / `image`) left out of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from mlscale.specs import rules
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.errors import SpecError
from mlscale.specs.rules import require

_NUMBER = r"(\d+(?:\.\d+)?)"
DURATION = re.compile(
    rf"^P(?:{_NUMBER}Y)?(?:{_NUMBER}M)?(?:{_NUMBER}W)?(?:{_NUMBER}D)?"
    rf"(?:T(?:{_NUMBER}H)?(?:{_NUMBER}M)?(?:{_NUMBER}S)?)?\Z"
)


@dataclass
class CacheConfig:
    enabled: bool = False
    expire_after: str | None = None  # an ISO 8601 duration (P30D, PT12H); None: entries never expire
    version: str = "1"
    ignored_inputs: list[str] = field(default_factory=list)
    location: str | None = None  # s3:// prefix of the entries; None: the `[mlscale] cache_location` setting

    template_fields = ("enabled", "expire_after", "version", "location")

    def validate(self, known_inputs: tuple[str, ...] | None = None) -> None:
        try:
            coerce_fields(self)
        except SpecError as error:  # name the field as the operator's argument spells it
            raise SpecError(f"cache.{error.field}", error.rule, error.value) from None
        require(isinstance(self.enabled, bool), "cache.enabled", "must be true or false", self.enabled)
        if self.expire_after is not None:
            self.expiry()
        require(
            isinstance(self.version, str) and 0 < len(self.version) <= 64,
            "cache.version",
            "must be a string of 1-64 characters",
            self.version,
        )
        require(
            isinstance(self.ignored_inputs, list) and all(isinstance(n, str) for n in self.ignored_inputs),
            "cache.ignored_inputs",
            "must be a list of input names",
            self.ignored_inputs,
        )
        for name in self.ignored_inputs if known_inputs is not None else []:
            require(
                name in known_inputs,
                "cache.ignored_inputs",
                f"{name!r} is not one of this stage's inputs {sorted(known_inputs)}",
            )
        if self.location is not None:
            rules.s3_uri(self.location, "cache.location")
        elif self.enabled is True:
            from mlscale.settings import setting

            require(
                bool(setting("cache_location")),
                "cache.location",
                "must name where the cache keeps its entries (an s3:// prefix), here or in [mlscale] cache_location",
            )

    def expiry(self) -> timedelta | None:
        """`expire_after` as a timedelta (ISO 8601 PnYnMnWnDTnHnMnS; a year counts 365 days, a month 30)."""
        if self.expire_after is None:
            return None
        match = DURATION.match(str(self.expire_after))
        require(
            match is not None and any(match.groups()),
            "cache.expire_after",
            "must be an ISO 8601 duration such as P30D, P4W or PT12H",
            self.expire_after,
        )
        years, months, weeks, days, hours, minutes, seconds = (float(g or 0) for g in match.groups())
        total = timedelta(
            days=years * 365 + months * 30 + weeks * 7 + days, hours=hours, minutes=minutes, seconds=seconds
        )
        require(total > timedelta(0), "cache.expire_after", "must be longer than zero", self.expire_after)
        return total

    @classmethod
    def of(cls, value: Any) -> CacheConfig | None:
        """A CacheConfig from an operator's `cache` argument: None, a CacheConfig, True/False or its dict."""
        if value is None or isinstance(value, CacheConfig):
            return value
        if isinstance(value, (bool, str)):
            return cls(enabled=value)  # type: ignore[arg-type] - a templated bool is validated later
        if isinstance(value, dict):
            return cls(**value)
        raise TypeError(f"cache: must be a CacheConfig, a bool or a dict (got {value!r})")
