"""SSM on the emulator: the Deep Learning AMI's public parameters
(`/aws/service/deeplearning/ami/...`, https://docs.aws.amazon.com/dlami/latest/devguide/find-dlami-id.html)
are not among moto's: each resolves to a stable made-up image id, as the ECS-optimized ones do in moto.
"""

from __future__ import annotations

import hashlib

from moto.ssm import models as ssm_models

DLAMI_PARAMETERS = "/aws/service/deeplearning/ami/"


def _check_loading_status(self, key: str) -> None:
    _moto_check_loading_status(self, key)
    key = str(key or "")
    if key.startswith(DLAMI_PARAMETERS) and key.endswith("/ami-id") and not dict.get(self, key):
        image = "ami-" + hashlib.sha256(f"{self.region_name}{key}".encode()).hexdigest()[:17]
        super(ssm_models.ParameterDict, self).__getitem__(key).append(
            ssm_models.Parameter(
                account_id=self.account_id,
                name=key,
                value=image,
                parameter_type="String",
                description=None,
                allowed_pattern=None,
                keyid=None,
                last_modified_date=ssm_models.utcnow(),
                version=1,
                data_type="aws:ec2:image",
            )
        )


_moto_check_loading_status = ssm_models.ParameterDict._check_loading_status


def install() -> None:
    ssm_models.ParameterDict._check_loading_status = _check_loading_status
