"""Profiles and checks, as pure functions over counts and arrays (numpy only)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from mlscale.specs.errors import SpecError
from mlscale.specs.rules import is_int, is_number

INTENSITY_BINS = np.linspace(0.0, 1.0, 21)  # mean ink per image, in [0, 1]
PSI_FLOOR = 1e-4  # empty bins would make PSI infinite


@dataclass(frozen=True)
class QualityThresholds:
    min_rows: int = 1000
    max_missing_fraction: float = 0.01
    max_duplicate_fraction: float = 0.01
    min_label_share: float = 0.05  # the rarest class must hold at least this share
    max_drift_psi: float = 0.2  # Population Stability Index; > 0.2 is the usual "significant shift"

    def validate(self) -> None:
        if not is_int(self.min_rows) or self.min_rows < 1:
            raise SpecError("min_rows", "must be an integer >= 1", self.min_rows)
        for name in ("max_missing_fraction", "max_duplicate_fraction", "min_label_share"):
            value = getattr(self, name)
            if not is_number(value) or not 0 <= value <= 1:
                raise SpecError(name, "must be a fraction from 0 to 1", value)
        if not is_number(self.max_drift_psi) or self.max_drift_psi <= 0:
            raise SpecError("max_drift_psi", "must be > 0", self.max_drift_psi)


@dataclass
class Check:
    name: str
    value: float
    threshold: float
    passed: bool
    rule: str  # "<=" or ">="

    def message(self) -> str:
        verdict = "passed" if self.passed else "failed"
        return f"{self.name} {verdict}: {_number(self.value)} (must be {self.rule} {_number(self.threshold)})"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"


@dataclass
class Profile:
    rows: int
    missing_fraction: dict[str, float]
    duplicate_fraction: float
    label_counts: dict[str, int]
    intensity: dict[str, float]  # summary of the mean ink per image
    intensity_histogram: list[int]
    pixel_means: list[list[float]] = field(default_factory=list)  # the average image

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Profile:
        return cls(**data)


def feature_profile(labels: np.ndarray, images: np.ndarray) -> dict:
    """Label balance and per-feature summaries of the records themselves; images in [0, 1], (n, h, w)."""
    ink = images.reshape(len(images), -1).mean(axis=1) if len(images) else np.zeros(0)
    quantiles = np.quantile(ink, [0.05, 0.5, 0.95]) if len(ink) else [0.0, 0.0, 0.0]
    values, counts = np.unique(labels, return_counts=True)
    return {
        "label_counts": {str(int(v)): int(c) for v, c in zip(values, counts)},
        "intensity": {
            "mean": float(ink.mean()) if len(ink) else 0.0,
            "std": float(ink.std()) if len(ink) else 0.0,
            "p05": float(quantiles[0]),
            "p50": float(quantiles[1]),
            "p95": float(quantiles[2]),
        },
        "intensity_histogram": np.histogram(ink, bins=INTENSITY_BINS)[0].astype(int).tolist(),
        "pixel_means": images.mean(axis=0).round(4).tolist() if len(images) else [],
    }


def psi(expected: list[int] | np.ndarray, actual: list[int] | np.ndarray) -> float:
    """Population Stability Index between two histograms over the same bins."""
    e = np.asarray(expected, dtype=float)
    a = np.asarray(actual, dtype=float)
    if e.sum() == 0 or a.sum() == 0:
        return 0.0
    e = np.clip(e / e.sum(), PSI_FLOOR, None)
    a = np.clip(a / a.sum(), PSI_FLOOR, None)
    return float(np.sum((a - e) * np.log(a / e)))


def label_histogram(counts: dict[str, int], classes: list[str]) -> list[int]:
    return [int(counts.get(c, 0)) for c in classes]


def drift(current: Profile, previous: Profile | None) -> dict[str, float]:
    """PSI of the label distribution and of the per-image ink distribution against the previous run."""
    if previous is None:
        return {}
    classes = sorted(set(current.label_counts) | set(previous.label_counts), key=int)
    return {
        "label_psi": psi(
            label_histogram(previous.label_counts, classes), label_histogram(current.label_counts, classes)
        ),
        "intensity_psi": psi(previous.intensity_histogram, current.intensity_histogram),
    }


def run_checks(profile: Profile, drift_values: dict[str, float], thresholds: QualityThresholds) -> list[Check]:
    checks = [Check("row_count", profile.rows, thresholds.min_rows, profile.rows >= thresholds.min_rows, ">=")]
    for column, fraction in sorted(profile.missing_fraction.items()):
        checks.append(
            Check(
                f"missing_fraction[{column}]",
                fraction,
                thresholds.max_missing_fraction,
                fraction <= thresholds.max_missing_fraction,
                "<=",
            )
        )
    checks.append(
        Check(
            "duplicate_fraction",
            profile.duplicate_fraction,
            thresholds.max_duplicate_fraction,
            profile.duplicate_fraction <= thresholds.max_duplicate_fraction,
            "<=",
        )
    )
    total = sum(profile.label_counts.values()) or 1
    rarest = min(profile.label_counts.values(), default=0) / total
    checks.append(
        Check("min_label_share", rarest, thresholds.min_label_share, rarest >= thresholds.min_label_share, ">=")
    )
    for name, value in sorted(drift_values.items()):
        checks.append(Check(f"drift_{name}", value, thresholds.max_drift_psi, value <= thresholds.max_drift_psi, "<="))
    return checks
