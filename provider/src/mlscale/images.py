"""Framework + version -> training image URI, through the SageMaker Python SDK's image_uris (imported only
when needed): v3's sagemaker-core (`sagemaker.core.image_uris`), or v2's `sagemaker.image_uris` where a user
has v2 installed; both read the same published table of AWS's framework images."""

from __future__ import annotations

from mlscale.specs.errors import SpecError
from mlscale.specs.training import TrainingSpec


def _image_uris():
    try:
        from sagemaker.core import image_uris  # SDK v3
    except ImportError:
        try:
            from sagemaker import image_uris  # SDK v2
        except ImportError:
            raise SpecError(
                "framework",
                "resolving a framework to its image needs the SageMaker Python SDK's image_uris "
                "(pip install 'mlscale[sdk]', which installs sagemaker-core); or give image_uri",
            ) from None
    return image_uris


def training_image_uri(spec: TrainingSpec, region: str) -> str:
    if spec.image_uri:
        return spec.image_uri
    image_uris = _image_uris()
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
