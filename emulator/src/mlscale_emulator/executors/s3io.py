"""S3 transfers for the executors, through the emulator's own S3 API."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path
from urllib.parse import urlparse

from mlscale_emulator.confine import PathEscape, within

COPY_CHUNK = 1 << 20


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


class KeyOutsideChannel(PathEscape):
    """An object's key resolves outside the directory it is downloaded into (`..` segments)."""


def inside(dest: Path, relative: str) -> Path:
    """`dest / relative`, refused when `..` would take it out of `dest` (S3 keys may hold any text)."""
    try:
        return within(dest, relative)
    except PathEscape:
        raise KeyOutsideChannel(f"the object key {relative!r} leaves its channel directory") from None


def download_prefix(s3, uri: str, dest: Path, keys: list[str] | None = None) -> int:
    """Download the objects under `uri` into `dest`, keeping paths relative to the prefix.

    Returns the number of bytes written. A key whose relative path leaves `dest` fails the download.
    """
    bucket, prefix = split_s3_uri(uri)
    keys = list_keys(s3, uri) if keys is None else keys
    total = 0
    for key in keys:
        relative = key[len(prefix) :].lstrip("/") or Path(key).name
        target = inside(dest, relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        total += download(s3, bucket, key, target)
    return total


def download(s3, bucket: str, key: str, target: Path) -> int:
    """One GetObject streamed to a file; its size.

    Not s3transfer: the executors' S3 is the emulator's own server, in their process, which answers one request
    at a time, so a transfer manager's HeadObject before each GET and its threads only added time (8 objects of
    120 KB: 40 ms through a TransferManager, 17 ms this way)."""
    body = s3.get_object(Bucket=bucket, Key=key)["Body"]
    with open(target, "wb") as f:
        shutil.copyfileobj(body, f, COPY_CHUNK)
    return target.stat().st_size


def download_and_extract(s3, uri: str, dest: Path) -> None:
    bucket, key = split_s3_uri(uri)
    archive = dest.parent / (dest.name + ".download.tar.gz")
    download(s3, bucket, key, archive)
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
    """One PutObject streaming the file (see `download` for why not s3transfer)."""
    bucket, key = split_s3_uri(uri)
    with open(path, "rb") as body:
        s3.put_object(Bucket=bucket, Key=key, Body=body)


def upload_directory(s3, source: Path, uri: str) -> None:
    """Upload every file below `source`; a symlink that leads outside it (left by a job) is refused."""
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        relative = str(path.relative_to(source))
        within(source, relative)
        upload_file(s3, path, f"{uri.rstrip('/')}/{relative}")
