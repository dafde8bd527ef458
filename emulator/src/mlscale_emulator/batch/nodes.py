"""A job's nodes from its job definition and SubmitJob's overrides: what each node's container runs with.

Multi-node parallel: `nodeProperties.nodeRangeProperties[].targetNodes` ("0", "1:", ":3", "0:2", inclusive)
give each node index its container; `nodeOverrides` (numNodes, nodePropertyOverrides) change them per range
(https://docs.aws.amazon.com/batch/latest/APIReference/API_NodeOverrides.html). A single-node `container` job
is one main node, index 0.
"""

from __future__ import annotations

import copy
from typing import Any


class NodeError(ValueError):
    """SubmitJob's nodes do not add up: a ClientException on AWS."""


def in_range(target: str, index: int, num_nodes: int) -> bool:
    if ":" not in target:
        return int(target) == index
    start, _, end = target.partition(":")
    return (int(start) if start else 0) <= index <= (int(end) if end else num_nodes - 1)


def _merge(container: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """containerOverrides on a container: command replaces, environment and resourceRequirements merge by name."""
    merged = copy.deepcopy(container)
    for key, value in overrides.items():
        if key == "environment":
            env = {e["name"]: e.get("value", "") for e in merged.get("environment") or []}
            env.update({e["name"]: e.get("value", "") for e in value or []})
            merged["environment"] = [{"name": k, "value": v} for k, v in env.items()]
        elif key == "resourceRequirements":
            reqs = {r["type"]: r["value"] for r in merged.get("resourceRequirements") or []}
            reqs.update({r["type"]: r["value"] for r in value or []})
            merged["resourceRequirements"] = [{"type": k, "value": v} for k, v in reqs.items()]
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def node_properties(job_definition: Any, node_overrides: dict[str, Any] | None) -> dict[str, Any]:
    """The job's effective nodeProperties: numNodes, mainNode and one container per node index."""
    definition = job_definition.node_properties
    overrides = node_overrides or {}
    num_nodes = int(overrides["numNodes"] if overrides.get("numNodes") is not None else definition["numNodes"])
    if num_nodes < 1:
        raise NodeError(f"numNodes must be at least 1, not {num_nodes}")
    main = int(definition.get("mainNode", 0))
    if not 0 <= main < num_nodes:
        raise NodeError(f"mainNode {main} is not a node of a {num_nodes}-node job")
    containers = []
    for index in range(num_nodes):
        ranges = [r for r in definition["nodeRangeProperties"] if in_range(r["targetNodes"], index, num_nodes)]
        if not ranges:
            raise NodeError(f"node {index} is in no nodeRangeProperties targetNodes range")
        container = ranges[-1].get("container") or {}
        for override in overrides.get("nodePropertyOverrides") or []:
            if in_range(override["targetNodes"], index, num_nodes):
                container = _merge(container, override.get("containerOverrides") or {})
        containers.append(container)
    return {"numNodes": num_nodes, "mainNode": main, "containers": containers}


def single_node(container: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
    return {"numNodes": 1, "mainNode": 0, "containers": [_merge(container, overrides or {})]}


def vcpus(container: dict[str, Any]) -> int:
    for requirement in container.get("resourceRequirements") or []:
        if requirement["type"] == "VCPU":
            return max(1, int(float(requirement["value"])))
    return int(container.get("vcpus") or 1)


def environment(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: str(e.get("value", "")) for e in container.get("environment") or []}
