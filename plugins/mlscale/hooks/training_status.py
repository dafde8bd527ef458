"""Readable progress lines from successive DescribeTrainingJob answers."""

from __future__ import annotations


def describe_progress(description: dict, previous: dict | None) -> list[str]:
    """One line per secondary status reached since `previous`."""
    transitions = description.get("SecondaryStatusTransitions") or []
    seen = len((previous or {}).get("SecondaryStatusTransitions") or [])
    name = description.get("TrainingJobName", "")
    return [f"{name}: {t['Status']} - {t.get('StatusMessage', '')}" for t in transitions[seen:]]
