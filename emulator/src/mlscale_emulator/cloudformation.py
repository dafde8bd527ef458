"""CloudFormation on the emulator: moto's stacks, with what moto cannot create named (the DLAMI's SSM
parameters the templates read: mlscale_emulator.ssm).

moto creates the resource types it models and skips the others with a warning in its own log. A user of
the emulator would not see that, so each skipped resource gets a stack event of its own (DescribeStackEvents,
the console's Events tab) saying it was not created and why.
"""

from __future__ import annotations

import logging

from moto.cloudformation import models as cfn_models
from moto.cloudformation import parsing as cfn_parsing

log = logging.getLogger(__name__)


def unmodelled(template: dict, resource_map) -> list[tuple[str, str]]:
    """(logical id, type) of the template's resources that moto skipped (false conditions aside)."""
    skipped = []
    for logical_id, resource in (template.get("Resources") or {}).items():
        condition = resource.get("Condition")
        if condition and not resource_map.lazy_condition_map[condition]:
            continue
        kind = resource.get("Type", "")
        if kind in cfn_parsing.NULL_MODELS or kind.startswith("Custom::"):
            continue
        if kind not in cfn_parsing.get_model_map():
            skipped.append((logical_id, kind))
    return skipped


def _create_resources(self) -> None:
    _moto_create_resources(self)
    for logical_id, kind in unmodelled(self.template_dict, self.resource_map):
        reason = (
            f"Not created: the mlscale emulator (moto) does not model {kind}; on AWS this resource is "
            "created, here nothing stands for it"
        )
        log.warning("stack %s: %s (%s) %s", self.name, logical_id, kind, reason)
        self.events.append(
            cfn_models.Event(
                stack_id=self.stack_id,
                stack_name=self.name,
                logical_resource_id=logical_id,
                physical_resource_id="",
                resource_type=kind,
                resource_status="CREATE_COMPLETE",
                resource_status_reason=reason,
                resource_properties=None,
            )
        )


# -- deleting what moto's CloudFormation creates but cannot delete (a stack's delete then left them behind,
# and the VPC, its gateway still attached, could not go) ---------------------------------------------------


def _ec2(region: str, account_id: str):
    from moto.ec2.models import ec2_backends

    return ec2_backends[account_id][region]


def _batch(region: str, account_id: str):
    from moto.batch.models import batch_backends

    return batch_backends[account_id][region]


def _install_deletes() -> None:
    from moto.batch import models as batch
    from moto.ec2.models import internet_gateways, route_tables, vpn_gateway

    deletes = {
        internet_gateways.InternetGateway: lambda self, a, r: _ec2(r, a).delete_internet_gateway(self.id),
        vpn_gateway.VPCGatewayAttachment: lambda self, a, r: _ec2(r, a).detach_internet_gateway(
            self.gateway_id, self.vpc_id
        ),
        route_tables.RouteTable: lambda self, a, r: _ec2(r, a).delete_route_table(self.id),
        route_tables.Route: lambda self, a, r: _ec2(r, a).delete_route(
            self.route_table.id, self.destination_cidr_block
        ),
        batch.ComputeEnvironment: lambda self, a, r: _batch(r, a).delete_compute_environment(self.arn),
        batch.JobQueue: lambda self, a, r: _batch(r, a).delete_job_queue(self.arn),
        batch.JobDefinition: lambda self, a, r: _batch(r, a).deregister_job_definition(self.arn),
    }
    for model, delete in deletes.items():
        model.delete = _already_gone_is_deleted(delete)


def _already_gone_is_deleted(delete):
    """moto deletes a stack's resources in no particular order: a route whose table went first is deleted."""

    def tolerant(self, account_id: str, region: str) -> None:
        try:
            delete(self, account_id, region)
        except Exception as error:
            if "NotFound" not in f"{type(error).__name__} {getattr(error, 'code', '')} {error}":
                raise

    return tolerant


_moto_create_resources = cfn_models.Stack.create_resources


def install() -> None:
    cfn_models.Stack.create_resources = _create_resources
    _install_deletes()
