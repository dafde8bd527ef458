"""Pack a script-mode source directory into sourcedir.tar.gz, reproducibly, and upload it once."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from pathlib import Path

SKIPPED = {"__pycache__", ".git", ".ipynb_checkpoints"}


def pack_source_dir(source_dir: str | Path, extra: dict[str, bytes] | None = None) -> tuple[bytes, str]:
    """The archive and a hash of its content. Same files -> same bytes (sorted, mtimes zeroed).

    `extra`: files added at the archive's top level ({name: content}), e.g. a launcher that runs the script."""
    root = Path(source_dir)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or SKIPPED & set(path.relative_to(root).parts) or path.suffix == ".pyc":
                continue
            info = tar.gettarinfo(str(path), arcname=str(path.relative_to(root)))
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            with open(path, "rb") as handle:
                tar.addfile(info, handle)
        for name, data in sorted((extra or {}).items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    content = raw.getvalue()
    return gzip.compress(content, mtime=0), hashlib.sha256(content).hexdigest()[:16]


def upload_if_missing(s3_hook, archive: bytes, uri: str) -> bool:
    """Upload unless the content-addressed key already exists; True when it uploaded."""
    bucket, key = s3_hook.parse_s3_url(uri)
    if s3_hook.check_for_key(key, bucket_name=bucket):
        return False
    s3_hook.load_bytes(archive, key=key, bucket_name=bucket, replace=True)
    return True
