"""IAM SimulatePrincipalPolicy, which moto lacks: the SageMaker Python SDK asks it before it trains.

The decision follows IAM's evaluation logic for one account's identity-based policies
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html): an explicit
Deny wins, else an Allow in the principal's inline or attached policies (or in PolicyInputList), within its
permissions boundary, allows; anything else is an implicit deny. Statements are matched by moto's own policy
evaluator (moto.iam.access_control), the one moto uses when it enforces IAM. The principal must exist, as on
AWS: NoSuchEntity otherwise.
"""

from __future__ import annotations

from typing import Any

_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    from moto.iam.responses import IamResponse

    IamResponse.simulate_principal_policy = _simulate_principal_policy
    _installed = True


def _simulate_principal_policy(self) -> Any:
    from moto.core.responses import ActionResult
    from moto.iam.exceptions import IAMException, NotFoundException

    source = self._get_param("PolicySourceArn")
    principal = _principal(self.backend, source)
    if principal is None:
        if ":group/" in (source or ""):
            raise IAMException("InvalidInput", "the emulator simulates users' and roles' policies, not groups'")
        raise NotFoundException(f"The principal {source} does not exist")
    documents = [
        *principal.policies.values(),
        *(_document(p) for p in principal.managed_policies.values()),
        *self._get_param("PolicyInputList", []),
    ]
    boundary_arn = getattr(principal, "permissions_boundary_arn", None)
    boundary = _document(self.backend.get_policy(boundary_arn)) if boundary_arn else None
    results = [
        _evaluate(action, resource, documents, boundary)
        for action in self._get_param("ActionNames", [])
        for resource in self._get_param("ResourceArns", []) or ["*"]
    ]
    return ActionResult({"EvaluationResults": results, "IsTruncated": False})


def _principal(backend: Any, arn: str | None) -> Any:
    for principal in [*backend.roles.values(), *backend.users.values()]:
        if principal.arn == arn:
            return principal
    return None


def _document(policy: Any) -> str:
    """A managed policy's default version's document."""
    return next(version.document for version in policy.versions if version.is_default)


def _evaluate(action: str, resource: str, documents: list[str], boundary: str | None) -> dict:
    from moto.iam.access_control import IAMPolicy, PermissionResult

    outcomes = [IAMPolicy(document).is_action_permitted(action, resource) for document in documents]
    if PermissionResult.DENIED in outcomes:
        decision = "explicitDeny"
    elif PermissionResult.PERMITTED in outcomes:
        allowed_by_boundary = boundary is None or (
            IAMPolicy(boundary).is_action_permitted(action, resource) == PermissionResult.PERMITTED
        )
        decision = "allowed" if allowed_by_boundary else "implicitDeny"
    else:
        decision = "implicitDeny"
    return {
        "EvalActionName": action,
        "EvalResourceName": resource,
        "EvalDecision": decision,
        "MatchedStatements": [],
        "MissingContextValues": [],
    }
