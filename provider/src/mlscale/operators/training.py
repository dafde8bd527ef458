"""Run a SageMaker script-mode training job (distributed or not) and wait for it."""

from __future__ import annotations

from typing import Any

from mlscale.links import TrainingJobLink
from mlscale.operators.caching import CacheParts
from mlscale.operators.sagemaker_job import SageMakerJobOperator
from mlscale.specs.training import InputChannel, TrainingSpec, build_training_request
from mlscale.waits.kinds import TRAINING


class SageMakerScriptTrainingOperator(SageMakerJobOperator):
    """Start a script-mode training job from a TrainingSpec and wait for its end.

    Naming, reattach-on-retry: SageMakerJobOperator; waiting, failures, kills: StageOperator.
    Returns (XCom) the job name, model artifact URI, final metrics and billable seconds.

    :param spec: the job; see mlscale.specs.TrainingSpec. Validated before any AWS call.
    :param job_name: explicit base name instead of the derived one.
    :param wait_for_completion: False ends the task once the job is created
        (XCom: job_name); mlscale.sensors.TrainingJobSensor then waits for it.
    :param deferrable: wait in the triggerer (default: True unless
        `[operators] default_deferrable` says otherwise).
    :param poll_interval: seconds between DescribeTrainingJob calls.
    """

    kind = TRAINING
    console_link = TrainingJobLink
    operator_extra_links = (TrainingJobLink(),)
    ui_color = "#ffd9b3"
    cache_stage = "training"

    def __init__(self, *, spec: TrainingSpec, **kwargs: Any):
        super().__init__(spec=spec, **kwargs)

    def cache_parts(self, context: Any) -> CacheParts:
        """The request (job name and code left out), the source dir's content hash, the image, the S3 channels.
        A channel on a file system (FSx) is named by its file system id: a run's own file system never hits."""
        from mlscale.aws.sourcedir import pack_source_dir
        from mlscale.images import training_image_uri

        region = self.hook.conn_region_name
        image_uri = training_image_uri(self.spec, region)
        _, content_hash = pack_source_dir(self.spec.source_dir)
        request = build_training_request(
            self.spec, job_name="<job>", image_uri=image_uri, sourcedir_uri="<code>", region=region
        )
        request.pop("Tags", None)
        inputs = {
            name: channel.s3_uri for name, channel in self.spec.channels().items() if isinstance(channel, InputChannel)
        }
        return CacheParts(request, inputs, extras={"code": content_hash, "image": image_uri})

    def lineage(self, context: Any, result: dict[str, Any]) -> tuple[list, list, dict]:
        from mlscale.aws import lineage

        spec = self.spec
        inputs = [lineage.s3(c.s3_uri) for c in spec.channels().values() if isinstance(c, InputChannel)]
        details = {
            "job_name": result["job_name"],
            "hyperparameters": {k: str(v) for k, v in spec.hyperparameters.items()},
            "instance_type": result["instance_type"],
            "instance_count": result["instance_count"],
            "final_metrics": result.get("final_metrics") or {},
            "billable_seconds": result.get("billable_seconds"),
        }
        outputs = [lineage.s3(result["model_artifact"])] if result.get("model_artifact") else []
        return inputs, outputs, details

    def _create_job(self, job_name: str, region: str) -> None:
        from mlscale.aws.sourcedir import pack_source_dir, upload_if_missing
        from mlscale.images import training_image_uri

        image_uri = training_image_uri(self.spec, region)
        archive, content_hash = pack_source_dir(self.spec.source_dir)
        sourcedir_uri = self.spec.sourcedir_uri(content_hash)
        s3 = self.s3_hook()
        if upload_if_missing(s3, archive, sourcedir_uri):
            self.log.info("Uploaded source dir %s to %s", self.spec.source_dir, sourcedir_uri)
        request = build_training_request(
            self.spec, job_name=job_name, image_uri=image_uri, sourcedir_uri=sourcedir_uri, region=region
        )
        self.log.info(
            "Creating training job %s: %s x %s, image %s",
            job_name,
            self.spec.instance_count,
            self.spec.instance_type,
            image_uri,
        )
        self.hook.conn.create_training_job(**self.tagged(request))
