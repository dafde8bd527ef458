"""Run a Python script as a SageMaker Processing job and wait for it (e.g. the shard stage)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from mlscale.links import ProcessingJobLink
from mlscale.operators.caching import CacheParts
from mlscale.operators.sagemaker_job import SageMakerJobOperator
from mlscale.specs.processing import ProcessingSpec, build_processing_request
from mlscale.waits.kinds import PROCESSING


class SageMakerProcessingScriptOperator(SageMakerJobOperator):
    """Upload `spec.script` (content-addressed), run it as a Processing job, wait, return its outputs.

    Naming, reattach-on-retry, deferral and failures: see SageMakerJobOperator.
    XCom: job name, status, output URIs by name, ExitMessage.
    """

    kind = PROCESSING
    console_link = ProcessingJobLink
    operator_extra_links = (ProcessingJobLink(),)
    ui_color = "#d9f2d9"
    cache_stage = "processing"

    def __init__(self, *, spec: ProcessingSpec, **kwargs: Any):
        super().__init__(spec=spec, **kwargs)

    def cache_parts(self, context: Any) -> CacheParts:
        """The request (job name and code URI left out), the script's hash, the image, inputs and outputs."""
        spec = self.spec
        request = build_processing_request(spec, job_name="<job>", code_uri="<code>")
        request.pop("Tags", None)
        return CacheParts(
            request,
            inputs={name: i.s3_uri for name, i in spec.inputs.items()},
            outputs={name: o.s3_uri for name, o in spec.outputs.items()},
            extras={"code": hashlib.sha256(Path(spec.script).read_bytes()).hexdigest()[:16], "image": spec.image_uri},
        )

    def lineage(self, context: Any, result: dict[str, Any]) -> tuple[list, list, dict]:
        from mlscale.aws import lineage

        spec = self.spec
        details = {
            "job_name": result["job_name"],
            "instance_type": spec.instance_type,
            "instance_count": spec.instance_count,
            "arguments": [str(a) for a in spec.arguments],
        }
        return (
            [lineage.s3(i.s3_uri) for i in spec.inputs.values()],
            [lineage.s3(uri) for uri in result.get("outputs", {}).values()],
            details,
        )

    def _create_job(self, job_name: str, region: str) -> None:
        from mlscale.aws.sourcedir import upload_if_missing

        script = Path(self.spec.script).read_bytes()
        digest = hashlib.sha256(script).hexdigest()[:16]
        code_uri = f"{self.spec.code_location.rstrip('/')}/{digest}/{Path(self.spec.script).name}"
        s3 = self.s3_hook()
        upload_if_missing(s3, script, code_uri)
        request = build_processing_request(self.spec, job_name=job_name, code_uri=code_uri)
        self.log.info(
            "Creating processing job %s: %s x %s running %s %s",
            job_name,
            self.spec.instance_count,
            self.spec.instance_type,
            Path(self.spec.script).name,
            " ".join(map(str, self.spec.arguments)),
        )
        self.hook.conn.create_processing_job(**self.tagged(request))
