"""S3 transfers for the executors, through the emulator's own S3 API (s3transfer underneath)."""

from __future__ import annotations

import tarfile
from pathlib import Path
from urllib.parse import urlparse


def split_s3_uri(uri: str) -> tuple[str, str]:
    parsed = urlparse(uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"not an S3 URI: {uri!r}")
    return parsed.netloc, parsed.path.lstrip("/")


def list_keys(s3, uri: str) -> list[str]:
    """Keys under an S3 prefix (or the object itself), sorted, folders markers left out."""
    bucket, prefix = split_s3_uri(uri)
    keys: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", []) if not o["Key"].endswith("/")]
    return sorted(keys)


class KeyOutsideChannel(ValueError):
    """An object's key resolves outside the directory it is downloaded into (`..` segments)."""


def inside(dest: Path, relative: str) -> Path:
    """`dest / relative`, refused when `..` would take it out of `dest` (S3 keys may hold any text)."""
    target = (dest / relative).resolve()
    if target != dest.resolve() and dest.resolve() not in target.parents:
        raise KeyOutsideChannel(f"the object key {relative!r} leaves its channel directory")
    return target


def download_prefix(s3, uri: str, dest: Path, keys: list[str] | None = None) -> int:
    """Download the objects under `uri` into `dest`, keeping paths relative to the prefix, several at a time (as
    SageMaker stages a channel; one after another, a week of daily files took 0.1 s of a 0.5 s job).

    Returns the number of bytes written. A key whose relative path leaves `dest` fails the download.
    """
    bucket, prefix = split_s3_uri(uri)
    keys = list_keys(s3, uri) if keys is None else keys
    targets = []
    for key in keys:
        relative = key[len(prefix):].lstrip("/") or Path(key).name
        targets.append((key, inside(dest, relative)))
        targets[-1][1].parent.mkdir(parents=True, exist_ok=True)
    with _transfers(s3) as manager:
        for future in [manager.download(bucket, key, str(target)) for key, target in targets]:
            future.result()
    return sum(target.stat().st_size for _, target in targets)


def _transfers(s3):
    """s3transfer's TransferManager: up to 10 transfers at once, each split into parts when large."""
    from boto3.s3.transfer import TransferConfig, create_transfer_manager

    return create_transfer_manager(s3, TransferConfig())


def download_and_extract(s3, uri: str, dest: Path) -> None:
    bucket, key = split_s3_uri(uri)
    archive = dest.parent / (dest.name + ".download.tar.gz")
    s3.download_file(bucket, key, str(archive))
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    archive.unlink()


def tar_directory(source: Path, archive: Path) -> Path:
    """Pack the contents of `source` (not the folder itself), as SageMaker's model.tar.gz is."""
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(source.iterdir()):
            tar.add(path, arcname=path.name)
    return archive


def upload_file(s3, path: Path, uri: str) -> None:
    bucket, key = split_s3_uri(uri)
    s3.upload_file(str(path), bucket, key)


def upload_directory(s3, source: Path, uri: str) -> None:
    """Upload every file under `source` below the prefix `uri`, several at a time."""
    bucket, prefix = split_s3_uri(uri)
    with _transfers(s3) as manager:
        futures = [manager.upload(str(path), bucket, f"{prefix.rstrip('/')}/{path.relative_to(source)}")
                   for path in sorted(p for p in source.rglob("*") if p.is_file())]  # fmt: skip
        for future in futures:
            future.result()
