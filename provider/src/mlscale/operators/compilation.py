"""Compile a trained model for its target hardware with SageMaker Neo."""

from __future__ import annotations

from typing import Any

from mlscale.links import CompilationJobLink
from mlscale.operators.caching import CacheParts
from mlscale.operators.sagemaker_job import SageMakerJobOperator
from mlscale.specs.compilation import CompilationSpec
from mlscale.waits.kinds import COMPILATION


class SageMakerNeoCompilationOperator(SageMakerJobOperator):
    """CreateCompilationJob from a CompilationSpec and wait (naming, reattach, deferral: SageMakerJobOperator).

    XCom: job name, compiled artifact URI, target, input shapes.
    """

    kind = COMPILATION
    console_link = CompilationJobLink
    operator_extra_links = (CompilationJobLink(),)
    ui_color = "#f4cccc"
    cache_stage = "compilation"

    def __init__(self, *, spec: CompilationSpec, **kwargs: Any):
        super().__init__(spec=spec, **kwargs)

    def cache_parts(self, context: Any) -> CacheParts:
        return CacheParts(
            self.spec.request("<job>"),
            inputs={"model": self.spec.model_artifact},
            outputs={"compiled": self.spec.output_uri},
        )

    def lineage(self, context: Any, result: dict[str, Any]) -> tuple[list, list, dict]:
        from mlscale.aws import lineage

        inputs = [lineage.s3(self.spec.model_artifact)]
        if self.spec.model_package_arn:  # the approved package this artifact is
            inputs.append(lineage.arn(self.spec.model_package_arn))
        details = {"job_name": result["job_name"], "target": result.get("target")}
        return inputs, [lineage.s3(result["compiled_artifact"])], details

    def _create_job(self, job_name: str, region: str) -> None:
        self.log.info(
            "Creating compilation job %s for %s", job_name, self.spec.target_device or self.spec.target_platform
        )
        self.hook.conn.create_compilation_job(**self.tagged(self.spec.request(job_name)))
