"""The benchmark suite's figures: a value beside its baseline from the same run, the ratio, its goal, met or not.

`make bench` prints one line per figure and writes them all to .mlscale/bench.json as a list of objects
{name, value, baseline, ratio, goal, met}, then `bench: N of M goals met`. A goal is a bound on the ratio
("<= 1.2", ">= 0.7"); a figure without a baseline (a count that must be zero) bounds its value instead.
"""

from __future__ import annotations

import json
import operator
import re
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path

GOAL = re.compile(r"^(<=|>=)\s*([0-9.]+)$")
COMPARE = {"<=": operator.le, ">=": operator.ge}


@dataclass
class Figure:
    name: str
    value: float
    baseline: float | None
    goal: str  # "<= 1.2": the ratio (or, without a baseline, the value) must stay within it
    unit: str = ""
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline is None:
            return None
        return self.value / self.baseline if self.baseline else float("inf")

    @property
    def met(self) -> bool:
        match = GOAL.match(self.goal)
        if not match:
            raise ValueError(f"{self.name}: goal {self.goal!r} is not '<= N' or '>= N'")
        measured = self.ratio if self.baseline is not None else self.value
        return COMPARE[match.group(1)](measured, float(match.group(2)))

    def as_json(self) -> dict:
        data = asdict(self)
        ratio = self.ratio
        data.update(ratio=ratio if ratio is None or ratio != float("inf") else None, met=self.met)  # JSON has no inf
        return {key: data[key] for key in ("name", "value", "baseline", "ratio", "goal", "met", "unit", "note")}

    def line(self) -> str:
        against = f" vs {self.baseline:,.4g}" if self.baseline is not None else ""
        measured = f"ratio {self.ratio:.2f}" if self.ratio is not None else f"value {self.value:g}"
        return (
            f"{'met ' if self.met else 'MISS'} {self.name}: {self.value:,.4g}{against} {self.unit} -> {measured} "
            f"(goal {self.goal}){'; ' + self.note if self.note else ''}"
        )


def spread(samples: list[float]) -> str:
    """Median and range of interleaved rounds, for a figure's note."""
    if len(samples) < 2:
        return f"1 round: {samples[0]:.4g}" if samples else "no rounds"
    return f"median of {len(samples)} rounds, {min(samples):.4g}-{max(samples):.4g}"


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def summary(figures: list[Figure]) -> str:
    return f"bench: {sum(f.met for f in figures)} of {len(figures)} goals met"


def write(figures: list[Figure], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([f.as_json() for f in figures], indent=2) + "\n")
