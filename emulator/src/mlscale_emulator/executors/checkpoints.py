"""CheckpointConfig: an instance's checkpoint folder and its S3Uri, kept in step as SageMaker keeps them
(https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints.html): down before the script starts, up
when it stops, is interrupted or completes."""

from __future__ import annotations

from typing import Any

from mlscale_emulator.executors import s3io


def sync_down(s3, job: Any, layout) -> None:
    uri = (job.checkpoint_config or {}).get("S3Uri")
    if uri and s3io.list_keys(s3, uri):
        s3io.download_prefix(s3, uri, layout.checkpoint_dir)


def sync_up(s3, job: Any, layout) -> None:
    uri = (job.checkpoint_config or {}).get("S3Uri")
    if uri and layout.checkpoint_dir.exists():
        s3io.upload_directory(s3, layout.checkpoint_dir, uri)
