"""One rule for every path the emulator builds from a request: resolved, it stays inside its root.

Names are checked against AWS's own patterns at the API first; this is the second wall, for values whose
pattern admits `..` or `/` (FSx paths, Glue table names, Greengrass component names, IoT thing names) and
for symlinks a job left behind. It runs before any write, read or symlink.
"""

from __future__ import annotations

from pathlib import Path


class PathEscape(ValueError):
    """A request named a path outside the directory it may use."""


def within(root: Path, *parts: str) -> Path:
    """`root / parts...`, resolved; PathEscape when it would be outside `root` (or a part is empty or has NUL)."""
    base = Path(root).resolve()
    for part in parts:
        if not isinstance(part, str) or not part or "\x00" in part:
            raise PathEscape(f"{part!r} is not a usable name for a path")
    path = base.joinpath(*parts).resolve()
    if not path.is_relative_to(base):
        raise PathEscape(f"{'/'.join(parts)!r} leads outside {base}")
    return path


def relative_path(value: str, field: str) -> str:
    """An absolute POSIX path with no `.`/`..` segment (an FSx FileSystemPath, a DirectoryPath), as given."""
    if not isinstance(value, str) or not value.startswith("/"):
        raise PathEscape(f"{field} must be an absolute path starting with /: {value!r}")
    if any(segment in (".", "..") for segment in value.split("/")) or "\x00" in value:
        raise PathEscape(f"{field} may not contain . or .. segments: {value!r}")
    return value
