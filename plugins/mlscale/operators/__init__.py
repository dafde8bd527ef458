"""mlscale's operators, one per pipeline stage."""

from mlscale.operators.quality import DataQualityOperator
from mlscale.operators.processing import SageMakerProcessingScriptOperator
from mlscale.operators.training import SageMakerScriptTrainingOperator

__all__ = ["DataQualityOperator", "SageMakerProcessingScriptOperator", "SageMakerScriptTrainingOperator"]
