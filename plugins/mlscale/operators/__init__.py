"""mlscale's operators, one per pipeline stage."""

from mlscale.operators.processing import SageMakerProcessingScriptOperator
from mlscale.operators.training import SageMakerScriptTrainingOperator

__all__ = ["SageMakerProcessingScriptOperator", "SageMakerScriptTrainingOperator"]
