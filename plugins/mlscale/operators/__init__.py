"""mlscale's operators, one per pipeline stage."""

from mlscale.operators.training import SageMakerScriptTrainingOperator

__all__ = ["SageMakerScriptTrainingOperator"]
