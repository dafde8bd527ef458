"""DiagnosisSpec: which finished training job to diagnose, and how its utilisation is read."""

from __future__ import annotations

from dataclasses import dataclass

from mlscale.specs import rules
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.rules import is_int, require


@dataclass
class DiagnosisSpec:
    job_name: str
    loader_workers: int = 1  # what the job ran with: the ladder's first rung adds more
    period: int = 60  # CloudWatch period (s) of the utilisation metrics
    data_wait_metric: str = "data:wait_fraction"  # the MetricDefinition with the loader's wait share

    template_fields = ("job_name", "loader_workers", "period")

    def validate(self) -> None:
        coerce_fields(self)
        require(
            isinstance(self.job_name, str) and bool(rules.NAME.match(self.job_name)),
            "job_name",
            "must be a training job name (1-63 letters, digits and '-')",
            self.job_name,
        )
        rules.in_range(self.loader_workers, "loader_workers", 0, 256)
        # GetMetricData: 1, 5, 10 or 30 s (high-resolution metrics) or a multiple of 60
        require(
            is_int(self.period) and (self.period in (1, 5, 10, 30) or (self.period >= 60 and self.period % 60 == 0)),
            "period",
            "must be 1, 5, 10, 30 or a multiple of 60 seconds",
            self.period,
        )
