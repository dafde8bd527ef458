"""mlscale's operators, one per pipeline stage."""

from mlscale.operators.approval import ModelApprovalOperator
from mlscale.operators.batch import BatchMultiNodeTrainingOperator
from mlscale.operators.compilation import SageMakerNeoCompilationOperator
from mlscale.operators.diagnosis import TrainingDiagnosisOperator
from mlscale.operators.edge import GreengrassEdgeDeployOperator
from mlscale.operators.endpoint import SageMakerEndpointDeployOperator
from mlscale.operators.etl import AthenaEtlOperator
from mlscale.operators.evaluation import SageMakerBatchEvaluationOperator
from mlscale.operators.fsx import FSxDeleteFileSystemOperator, FSxLustreStageOperator
from mlscale.operators.processing import SageMakerProcessingScriptOperator
from mlscale.operators.quality import DataQualityOperator
from mlscale.operators.spark import GlueSparkJobOperator
from mlscale.operators.training import SageMakerScriptTrainingOperator

__all__ = [
    "AthenaEtlOperator",
    "BatchMultiNodeTrainingOperator",
    "DataQualityOperator",
    "FSxDeleteFileSystemOperator",
    "FSxLustreStageOperator",
    "GlueSparkJobOperator",
    "GreengrassEdgeDeployOperator",
    "ModelApprovalOperator",
    "SageMakerBatchEvaluationOperator",
    "SageMakerEndpointDeployOperator",
    "SageMakerNeoCompilationOperator",
    "SageMakerProcessingScriptOperator",
    "SageMakerScriptTrainingOperator",
    "TrainingDiagnosisOperator",
]
