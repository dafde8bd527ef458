"""One line a person can follow while a job runs: status, elapsed time, and for training the epoch and metrics.

The job's own log lines are in the task log too, but with N hosts and loader statistics they scroll past; this
summarises them: "train-x: Training, epoch 3/4 (75%), train:loss=0.0812 test:accuracy=0.9790, 1m12s elapsed".
The epoch comes from `epoch=N` (or `epoch N`) in the logs, the total from the `epochs` hyperparameter, and the
metrics from the job's MetricDefinitions, as SageMaker itself extracts them.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from mlscale.metric_regex import MetricRegexError, compile_metric

EPOCH = re.compile(r"\bepoch[=: ]+(\d+)", re.IGNORECASE)


def _elapsed(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{seconds:02d}s"
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


class ProgressReporter:
    """Feed it each poll's description and new log lines; it answers the lines worth logging (often none)."""

    def __init__(self, name_key: str, status_key: str, every_seconds: float = 60):
        self.name_key, self.status_key, self.every_seconds = name_key, status_key, every_seconds
        self.epoch: int | None = None
        self.metrics: dict[str, float] = {}
        self._last_report = time.monotonic()

    def update(self, description: dict, log_lines: list[str]) -> list[str]:
        definitions = (description.get("AlgorithmSpecification") or {}).get("MetricDefinitions") or []
        new_epoch = False
        for line in log_lines:
            if match := EPOCH.search(line):
                new_epoch |= int(match.group(1)) != self.epoch
                self.epoch = int(match.group(1))
            for definition in definitions:
                try:
                    pattern = compile_metric(definition["Regex"])
                except MetricRegexError:  # a job made elsewhere: its metric is not reported here
                    continue
                if match := pattern.search(line):
                    try:
                        self.metrics[definition["Name"]] = float(match.group(1))
                    except (IndexError, ValueError):
                        pass
        if not new_epoch and time.monotonic() - self._last_report < self.every_seconds:
            return []
        self._last_report = time.monotonic()
        return [self.line(description)]

    def line(self, description: dict) -> str:
        status = description.get("SecondaryStatus") or description.get(self.status_key)
        parts = [f"{description.get(self.name_key, '')}: {status}"]
        if self.epoch is not None:
            total = (description.get("HyperParameters") or {}).get("epochs", "").strip('"')
            parts.append(
                f"epoch {self.epoch}/{total} ({100 * self.epoch // int(total)}%)"
                if total.isdigit() and int(total) > 0
                else f"epoch {self.epoch}"
            )
        if self.metrics:
            parts.append(" ".join(f"{name}={value:.4f}" for name, value in sorted(self.metrics.items())))
        started = (
            description.get("TrainingStartTime")
            or description.get("ProcessingStartTime")
            or description.get("TransformStartTime")
            or description.get("CreationTime")
        )
        if isinstance(started, datetime):
            parts.append(f"{_elapsed((datetime.now(UTC) - started).total_seconds())} elapsed")
        return "progress: " + ", ".join(parts)
