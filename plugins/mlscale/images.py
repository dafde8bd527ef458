"""Framework + version -> training image URI, through the SageMaker SDK (imported only when needed)."""

from __future__ import annotations

from mlscale.specs.errors import SpecError
from mlscale.specs.training import TrainingSpec


def training_image_uri(spec: TrainingSpec, region: str) -> str:
    if spec.image_uri:
        return spec.image_uri
    try:
        from sagemaker import image_uris
    except ImportError:
        raise SpecError(
            "framework",
            "resolving a framework to its image needs the SageMaker SDK (pip install 'mlscale[sdk]'); "
            "or give image_uri",
        ) from None
    try:
        return image_uris.retrieve(
            framework=spec.framework,
            region=region,
            version=spec.framework_version,
            py_version=spec.py_version,
            instance_type=spec.instance_type,
            image_scope="training",
        )
    except ValueError as error:
        raise SpecError("framework_version", str(error), spec.framework_version) from None
