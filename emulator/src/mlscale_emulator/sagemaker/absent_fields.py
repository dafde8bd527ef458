"""Describe answers as SageMaker gives them: a structure or list the request did not set is absent, not empty.

moto answers "VpcConfig": {} and "Containers": [] for a model created without them, and "DataCaptureConfig": {}
for an endpoint and its config. A client that reads an answer against the API's shapes refuses a VpcConfig
without its required Subnets, or a DataCaptureConfig without EnableCapture: the SageMaker Python SDK v3's
Model.get and Endpoint.get fail so in ModelBuilder.build() and .deploy(). moto's own records keep them (its
CreateEndpoint reads the config's DataCaptureConfig); only the answers change.
"""

from __future__ import annotations

from typing import Any

from moto.core.responses import ActionResult
from moto.sagemaker import responses as sm_responses

DESCRIBES = ("describe_model", "describe_endpoint", "describe_endpoint_config")
_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    for name in DESCRIBES:
        setattr(sm_responses.SageMakerResponse, name, _without_empty(getattr(sm_responses.SageMakerResponse, name)))
    _installed = True


def _without_empty(describe):
    def answer(self) -> Any:
        result = describe(self)
        if isinstance(result, ActionResult) and isinstance(result.result, dict):
            return ActionResult({k: v for k, v in result.result.items() if not (isinstance(v, (dict, list)) and not v)})
        return result

    return answer
