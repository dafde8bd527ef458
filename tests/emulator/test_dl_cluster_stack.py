"""include/cloudformation/dl_cluster.yaml: cfn-lint clean, least privilege, and a working cluster on the emulator."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import boto3
import pytest
import yaml

from mlscale.operators import BatchMultiNodeTrainingOperator
from mlscale.specs import BatchTrainingSpec
from tests.conftest import REPO
from tests.operators.test_training_operator import FakeTI

TEMPLATE = REPO / "include" / "cloudformation" / "dl_cluster.yaml"
CPU_CLUSTER = {
    "DataBucket": "mlscale-test",
    "InstanceType": "c5.xlarge",
    "NodeVcpus": "1",
    "NodeMemoryMiB": "1024",
    "NodeGpus": "0",
    "MaxvCpus": "8",
}


def test_cfn_lint_passes():
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    result = subprocess.run([str(cfn_lint), str(TEMPLATE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _statements(template: dict):
    for name, resource in template["Resources"].items():
        props = resource.get("Properties", {})
        documents = [p["PolicyDocument"] for p in props.get("Policies", [])]
        documents += [props["PolicyDocument"]] if "PolicyDocument" in props else []
        for document in documents:
            for statement in document["Statement"]:
                yield name, statement


def test_policies_are_least_privilege():
    from moto.cloudformation.utils import yaml_tag_constructor

    yaml.add_multi_constructor("", yaml_tag_constructor, Loader=yaml.SafeLoader)
    template = yaml.safe_load(TEMPLATE.read_text())
    statements = list(_statements(template))
    assert statements
    for name, statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert all(action != "*" and not action.endswith(":*") for action in actions), (name, actions)
        assert statement.get("Resource") not in (None, "*"), (name, statement)  # scoped to the stack's resources
    # the nodes reach each other on every port; nothing else reaches them
    ingress = template["Resources"]["NodeToNode"]["Properties"]
    assert ingress["IpProtocol"] == "-1" and ingress["SourceSecurityGroupId"] == {"Ref": "NodeSecurityGroup"}


@pytest.mark.emulator
def test_the_stack_makes_a_cluster_that_trains_notifies_and_goes_away(emulator, clients):
    def client(service):
        return boto3.client(service, endpoint_url=emulator.endpoint_url, region_name="us-east-1")

    cfn, batch, sqs, sns = client("cloudformation"), client("batch"), client("sqs"), client("sns")
    name = f"dl-{uuid.uuid4().hex[:6]}"
    cfn.create_stack(
        StackName=name,
        TemplateBody=TEMPLATE.read_text(),
        Capabilities=["CAPABILITY_IAM"],
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in CPU_CLUSTER.items()],
    )
    cfn.get_waiter("stack_create_complete").wait(StackName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    outputs = {o["OutputKey"]: o["OutputValue"] for o in cfn.describe_stacks(StackName=name)["Stacks"][0]["Outputs"]}
    assert {"JobQueueArn", "JobDefinitionArn", "ActivityTopicArn", "SharedFileSystemId"} <= set(outputs)
    assert "SpotJobQueueArn" not in outputs  # UseSpot defaults to false

    # what moto cannot create is named in the stack's events, not dropped in silence
    events = cfn.describe_stack_events(StackName=name)["StackEvents"]
    skipped = {
        e["LogicalResourceId"]: e["ResourceStatusReason"]
        for e in events
        if "does not model" in (e.get("ResourceStatusReason") or "")
    }
    assert {"ClusterPlacementGroup", "ActivityTopicPolicy"} <= set(skipped)
    assert "AWS::EC2::PlacementGroup" in skipped["ClusterPlacementGroup"]

    environment = batch.describe_compute_environments()["computeEnvironments"]
    ours = [e for e in environment if e["computeEnvironmentName"].startswith(f"{name}-")]
    assert [e["computeResources"]["minvCpus"] for e in ours] == [0]  # idle costs nothing

    queue_url = sqs.create_queue(QueueName=f"{name}-activity")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(
        TopicArn=outputs["ActivityTopicArn"],
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true"},
    )

    spec = BatchTrainingSpec(
        job_queue=outputs["JobQueueArn"],
        job_definition=outputs["JobDefinitionArn"],
        command=["python", "-c", "import os; print('node', os.environ['AWS_BATCH_JOB_NODE_INDEX'])"],
        vcpus=1,
        memory_mib=1024,
    )
    operator = BatchMultiNodeTrainingOperator(task_id="on_the_stack", spec=spec, deferrable=False, poll_interval=0.3)
    result = operator.execute({"ti": FakeTI("on_the_stack", run_id=f"manual__{name}")})
    assert result["status"] == "SUCCEEDED" and result["node_count"] == 2

    statuses, deadline = set(), time.monotonic() + 20
    while "SUCCEEDED" not in statuses and time.monotonic() < deadline:
        for message in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get(
            "Messages", []
        ):
            detail = json.loads(message["Body"])["detail"]
            if detail["jobId"] == result["job_id"]:
                statuses.add(detail["status"])
    assert {"RUNNING", "SUCCEEDED"} <= statuses

    cfn.delete_stack(StackName=name)
    queues = [q["jobQueueArn"] for q in batch.describe_job_queues()["jobQueues"]]
    assert outputs["JobQueueArn"] not in queues
    definitions = batch.describe_job_definitions(jobDefinitions=[outputs["JobDefinitionArn"]])["jobDefinitions"]
    assert [d["status"] for d in definitions] in ([], ["INACTIVE"])
