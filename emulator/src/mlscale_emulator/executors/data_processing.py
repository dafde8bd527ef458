"""Batch Transform's DataProcessing: InputFilter, JoinSource and OutputFilter.

The JSONPath subset SageMaker documents for these filters: `$`, `$.name`,
`$['name']`, `$[n]`, `$[a:b]` (and open ends), `$[i,j,...]`, chained. On
CSV records a record is the list of its columns; on JSON records it is the
parsed value. JoinSource=Input puts the output after the input: CSV columns
appended, or a JSON object with the output under "SageMakerOutput".
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

_STEP = re.compile(r"\.([A-Za-z_][\w-]*)|\['([^']+)'\]|\[(-?\d*):(-?\d*)\]|\[(-?\d+(?:\s*,\s*-?\d+)*)\]")


class FilterError(ValueError):
    pass


def parse_path(path: str) -> list[tuple]:
    if not path or not path.startswith("$"):
        raise FilterError(f"JSONPath {path!r} must start with $")
    steps, position = [], 1
    while position < len(path):
        match = _STEP.match(path, position)
        if not match:
            raise FilterError(
                f"JSONPath {path!r}: unsupported syntax at {path[position:]!r} "
                "(SageMaker's subset: .name, ['name'], [n], [a:b], [i,j])"
            )
        name, quoted, start, stop, indexes = match.groups()
        if name or quoted:
            steps.append(("key", name or quoted))
        elif indexes is not None:
            steps.append(("pick", [int(i) for i in indexes.split(",")]))
        else:
            steps.append(("slice", int(start) if start else None, int(stop) if stop else None))
        position = match.end()
    return steps


def select(value: Any, path: str) -> Any:
    for step in parse_path(path):
        if step[0] == "key":
            if not isinstance(value, dict) or step[1] not in value:
                raise FilterError(f"JSONPath {path!r}: no key {step[1]!r} in the record")
            value = value[step[1]]
        elif step[0] == "pick":
            value = value[step[1][0]] if len(step[1]) == 1 else [value[i] for i in step[1]]
        else:
            value = value[step[1] : step[2]]
    return value


def _csv_values(text: str) -> list[str]:
    return next(csv.reader([text]))


def _csv_line(values: Any) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(values if isinstance(values, list) else [values])
    return buffer.getvalue()


def _is_json(content_type: str | None) -> bool:
    return "json" in (content_type or "")


def filter_input(record: bytes, path: str | None, content_type: str | None) -> bytes:
    if not path or path == "$":
        return record
    text = record.decode()
    if _is_json(content_type):
        return json.dumps(select(json.loads(text), path)).encode()
    return _csv_line(select(_csv_values(text), path)).encode()


def join_and_filter(
    record: bytes, output: bytes, join: str | None, path: str | None, content_type: str | None, accept: str | None
) -> bytes:
    if join != "Input" and (not path or path == "$"):
        return output
    if join == "Input":
        if _is_json(content_type) or _is_json(accept):
            source = json.loads(record.decode())
            joined = source if isinstance(source, dict) else {"SageMakerInput": source}
            joined = {**joined, "SageMakerOutput": json.loads(output.decode())}
        else:
            joined = _csv_values(record.decode()) + _csv_values(output.decode())
    else:
        joined = json.loads(output.decode()) if _is_json(accept) else _csv_values(output.decode())
    result = select(joined, path) if path and path != "$" else joined
    return (json.dumps(result) if isinstance(joined, dict) or _is_json(accept) else _csv_line(result)).encode()
