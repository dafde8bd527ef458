"""Params for a DAG's trigger form that cost little at every parse and serialization.

Airflow deep-copies a DAG's params into each task at every level of the operator class's `__init__` (four or
five copies a task), and checks a Param's schema against its metaschema each time it validates a value: at
parse, and for every task's params when it serializes the DAG. A DAG processor does both for each DAG file
every `min_file_process_interval` (30 s by default). With the example pipeline's 20-field form and 25 tasks,
the copies were ~60% of a parse and the schema checks ~90% of serializing the DAG
(https://airflow.apache.org/docs/apache-airflow/stable/core-concepts/params.html).

`form_param` makes an ordinary Param (Airflow serializes nothing else) with two differences:
- its schema is read-only, so the copies share it instead of copying it (Airflow's own `Param.__copy__`
  shares it too);
- the schema names JSON Schema draft 7 (`$schema`), which has every keyword a trigger form uses (type, enum,
  minimum, maximum, pattern, format, ...) and whose metaschema check costs a quarter of that of the default,
  2020-12 (https://python-jsonschema.readthedocs.io/en/stable/validate/#choosing-a-version).
"""

from __future__ import annotations

from typing import Any, NoReturn

from airflow.sdk import Param

DRAFT_7 = "http://json-schema.org/draft-07/schema#"


class FrozenSchema(dict):
    """A JSON schema that cannot change, so copies of its Param may share it (deepcopy returns it)."""

    def __deepcopy__(self, memo: dict) -> FrozenSchema:
        return self

    def __copy__(self) -> FrozenSchema:
        return self

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a form_param's schema is read-only: make a new form_param instead")

    __setitem__ = __delitem__ = __ior__ = _read_only  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _read_only  # type: ignore[assignment]

    def __reduce__(self):  # pickles and copies as a FrozenSchema, not through __setitem__
        return (FrozenSchema, (dict(self),))


def form_param(default: Any, description: str | None = None, **schema: Any) -> Param:
    """`Param(default, description, **schema)` whose schema is draft 7 and shared by its copies.

    Nested values (an enum list, a `properties` object) are shared as they are: do not change them later.
    """
    return Param(default, description, schema=FrozenSchema({"$schema": DRAFT_7, **schema}))
