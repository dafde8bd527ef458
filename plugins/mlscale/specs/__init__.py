"""Typed specs: what a stage needs, validated before any AWS call, turned into requests by pure functions."""

from mlscale.specs.errors import SpecError
from mlscale.specs.training import InputChannel, TrainingSpec

__all__ = ["InputChannel", "SpecError", "TrainingSpec"]
