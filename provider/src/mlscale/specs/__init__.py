"""Typed specs: what a stage needs, validated before any AWS call, turned into requests by pure functions."""

from mlscale.specs.batch import BatchTrainingSpec
from mlscale.specs.cache import CacheConfig
from mlscale.specs.compilation import CompilationSpec
from mlscale.specs.diagnosis import DiagnosisSpec
from mlscale.specs.edge import EdgeDeploymentSpec
from mlscale.specs.endpoint import EndpointSpec
from mlscale.specs.errors import SpecError
from mlscale.specs.etl import AthenaEtlSpec
from mlscale.specs.evaluation import EvaluationSpec
from mlscale.specs.fsx import FSxLustreSpec
from mlscale.specs.processing import ProcessingInput, ProcessingOutput, ProcessingSpec
from mlscale.specs.quality import QualitySpec
from mlscale.specs.spark import GlueSparkSpec
from mlscale.specs.training import FileSystemChannel, InputChannel, TrainingSpec

__all__ = [
    "AthenaEtlSpec",
    "BatchTrainingSpec",
    "CacheConfig",
    "CompilationSpec",
    "DiagnosisSpec",
    "EdgeDeploymentSpec",
    "EndpointSpec",
    "EvaluationSpec",
    "FSxLustreSpec",
    "FileSystemChannel",
    "GlueSparkSpec",
    "InputChannel",
    "ProcessingInput",
    "ProcessingOutput",
    "ProcessingSpec",
    "QualitySpec",
    "SpecError",
    "TrainingSpec",
]
