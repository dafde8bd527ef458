"""IAM SimulatePrincipalPolicy, as the SageMaker Python SDK asks it before it trains."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.emulator

TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}


@pytest.fixture(scope="module")
def iam(emulator):
    import boto3

    return boto3.client("iam", endpoint_url=emulator.endpoint_url, region_name="us-east-1")


def decisions(iam, role_arn: str, actions: list[str], resources: list[str] | None = None) -> dict[str, str]:
    pages = iam.get_paginator("simulate_principal_policy").paginate(
        PolicySourceArn=role_arn, ActionNames=actions, **({"ResourceArns": resources} if resources else {})
    )
    return {r["EvalActionName"]: r["EvalDecision"] for page in pages for r in page["EvaluationResults"]}


def test_a_role_gets_what_its_policies_allow_and_an_explicit_deny_wins(iam):
    role = iam.create_role(RoleName="sim-trainer", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    iam.put_role_policy(
        RoleName="sim-trainer",
        PolicyName="data",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": ["s3:PutObject", "s3:GetObject", "s3:DeleteObject"],
                        "Resource": "arn:aws:s3:::sim-bucket/*",
                    },
                    {"Effect": "Deny", "Action": "s3:DeleteObject", "Resource": "*"},
                ],
            }
        ),
    )
    managed = iam.create_policy(
        PolicyName="sim-sagemaker",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sagemaker:*", "Resource": "*"}]}
        ),
    )
    iam.attach_role_policy(RoleName="sim-trainer", PolicyArn=managed["Policy"]["Arn"])

    assert decisions(
        iam,
        role,
        ["s3:PutObject", "s3:DeleteObject", "sagemaker:CreateTrainingJob", "ec2:RunInstances"],
        ["arn:aws:s3:::sim-bucket/model.tar.gz"],
    ) == {
        "s3:PutObject": "allowed",
        "s3:DeleteObject": "explicitDeny",
        "sagemaker:CreateTrainingJob": "allowed",
        "ec2:RunInstances": "implicitDeny",
    }
    # another bucket is not in the statement's resources
    assert decisions(iam, role, ["s3:PutObject"], ["arn:aws:s3:::other-bucket/x"]) == {"s3:PutObject": "implicitDeny"}


def test_a_permissions_boundary_limits_what_the_policies_allow(iam):
    boundary = iam.create_policy(
        PolicyName="sim-boundary",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
        ),
    )
    role = iam.create_role(
        RoleName="sim-bounded",
        AssumeRolePolicyDocument=json.dumps(TRUST),
        PermissionsBoundary=boundary["Policy"]["Arn"],
    )["Role"]["Arn"]
    iam.put_role_policy(
        RoleName="sim-bounded",
        PolicyName="all",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        ),
    )
    assert decisions(iam, role, ["s3:GetObject", "sagemaker:CreateModel"]) == {
        "s3:GetObject": "allowed",
        "sagemaker:CreateModel": "implicitDeny",
    }


def test_a_principal_that_does_not_exist_is_no_such_entity(iam):
    with pytest.raises(iam.exceptions.NoSuchEntityException):
        iam.simulate_principal_policy(
            PolicySourceArn="arn:aws:iam::123456789012:role/sim-never-made", ActionNames=["s3:PutObject"]
        )
