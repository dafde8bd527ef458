"""A stage's lineage (the `lineage` of its XCom) as the OpenLineage provider's OperatorLineage.

The provider calls `get_openlineage_facets_on_complete` on an operator once its task succeeds
(https://airflow.apache.org/docs/apache-airflow-providers-openlineage/stable/guides/developer.html);
StageOperator answers with this. Schemas become the standard SchemaDatasetFacet; the rest (a model
package's approval status, an endpoint's config, a Greengrass deployment's devices) and the run's details
(fingerprint, cache, hyperparameters, instances, final metrics) are mlscale's own facets.
"""

from __future__ import annotations

from typing import Any

import attr
from openlineage.client.facet_v2 import DatasetFacet, RunFacet, schema_dataset

SCHEMA_URL = "https://github.com/mlscale/mlscale/blob/main/README.md#lineage"


@attr.define
class MlscaleStageRunFacet(RunFacet):
    """What ran: the stage's fingerprint and cache outcome, and its details (job, hyperparameters, metrics)."""

    fingerprint: str | None = attr.field(default=None)
    cache: dict = attr.field(factory=dict)
    details: dict = attr.field(factory=dict)

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_URL}/MlscaleStageRunFacet"


@attr.define
class MlscaleResourceDatasetFacet(DatasetFacet):
    """An AWS resource's own state: a model package's approval status, an endpoint's config, a deployment."""

    properties: dict = attr.field(factory=dict)

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_URL}/MlscaleResourceDatasetFacet"


def _dataset(item: dict[str, Any]) -> Any:
    from openlineage.client.event_v2 import Dataset

    facets: dict[str, Any] = {}
    for name, value in (item.get("facets") or {}).items():
        if name == "schema":
            facets["schema"] = schema_dataset.SchemaDatasetFacet(
                fields=[schema_dataset.SchemaDatasetFacetFields(name=f["name"], type=f.get("type")) for f in value]
            )
        else:
            facets[f"mlscale_{name}"] = MlscaleResourceDatasetFacet(properties=value)
    return Dataset(namespace=item["namespace"], name=item["name"], facets=facets)


def operator_lineage(result: dict[str, Any] | None) -> Any:
    """OperatorLineage from a stage's result (empty for a stage that made none)."""
    from airflow.providers.openlineage.extractors import OperatorLineage

    lineage = (result or {}).get("lineage") or {}
    run = MlscaleStageRunFacet(
        fingerprint=(result or {}).get("fingerprint"),
        cache=(result or {}).get("cache") or {},
        details=lineage.get("details") or {},
    )
    return OperatorLineage(
        inputs=[_dataset(d) for d in lineage.get("inputs", [])],
        outputs=[_dataset(d) for d in lineage.get("outputs", [])],
        run_facets={"mlscale_stage": run},
    )
