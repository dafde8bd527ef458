"""The Athena stages start their query once per task run: a retried try reattaches, and ETL never deletes what a
query of its run may still be writing."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from mlscale.operators.athena_query import client_token, start_or_reattach

LOG = logging.getLogger(__name__)
REQUEST = {"QueryString": "UNLOAD (SELECT 1) TO 's3://b/etl/'", "QueryExecutionContext": {"Database": "db"}}


def context(run_id: str = "manual__1") -> dict:
    return {"ti": SimpleNamespace(dag_id="d", task_id="etl", run_id=run_id, map_index=-1)}


class FakeAthena:
    """Athena's token semantics: the same token answers the same query; states are set by the test."""

    def __init__(self, states: dict[int, str]):
        self.states, self.by_token, self.started = states, {}, []

    def start_query_execution(self, ClientRequestToken: str, **request):  # noqa: N803 - the API's name
        if ClientRequestToken not in self.by_token:
            self.started.append(ClientRequestToken)
            self.by_token[ClientRequestToken] = f"q{len(self.started)}"
        return {"QueryExecutionId": self.by_token[ClientRequestToken]}

    def get_query_execution(self, QueryExecutionId: str):  # noqa: N803
        state = self.states.get(int(QueryExecutionId[1:]), "RUNNING")
        return {"QueryExecution": {"QueryExecutionId": QueryExecutionId, "Status": {"State": state}}}


def test_a_retried_try_reattaches_to_the_query_its_killed_try_started():
    athena, ended = FakeAthena({1: "RUNNING"}), []
    first = start_or_reattach(athena, REQUEST, context(), "etl", LOG, before_next_attempt=lambda *a: ended.append(a))
    again = start_or_reattach(athena, REQUEST, context(), "etl", LOG, before_next_attempt=lambda *a: ended.append(a))
    assert first[0] == again[0] == "q1" and len(athena.started) == 1
    assert ended == []  # the running query's output is never touched


def test_after_a_failed_query_the_next_attempt_starts_and_a_later_try_goes_straight_to_it():
    athena, ended = FakeAthena({1: "FAILED", 2: "RUNNING"}), []
    query_id, _ = start_or_reattach(
        athena, REQUEST, context(), "etl", LOG, before_next_attempt=lambda *a: ended.append(a)
    )
    assert query_id == "q2" and ended == [("q1", 2)] and len(athena.started) == 2
    # the stage recorded attempt 2 before it started: its next try begins there, and q2's output stays
    again, _ = start_or_reattach(
        athena, REQUEST, context(), "etl", LOG, first_attempt=2, before_next_attempt=lambda *a: ended.append(a)
    )
    assert again == "q2" and ended == [("q1", 2)]


@pytest.mark.parametrize("change", [{"run_id": "manual__2"}, {"request": {**REQUEST, "QueryString": "SELECT 2"}}])
def test_another_run_or_another_query_is_another_token(change):
    ti = context(change.get("run_id", "manual__1"))
    token = client_token(ti, 1, "etl", change.get("request", REQUEST))
    assert token != client_token(context(), 1, "etl", REQUEST) and len(token) == 64
    assert client_token(context(), 1, "etl", REQUEST) == client_token(context(), 1, "etl", dict(REQUEST))


@pytest.mark.emulator
def test_the_emulator_answers_a_token_with_its_query(emulator, clients):
    import boto3
    from botocore.exceptions import ClientError

    athena = boto3.client("athena", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    request = {"QueryString": "SELECT 1 AS one", "ResultConfiguration": {"OutputLocation": "s3://mlscale-test/tok/"}}
    token = "t" * 40
    first = athena.start_query_execution(**request, ClientRequestToken=token)["QueryExecutionId"]
    assert athena.start_query_execution(**request, ClientRequestToken=token)["QueryExecutionId"] == first
    with pytest.raises(ClientError, match="different QueryString"):
        athena.start_query_execution(**{**request, "QueryString": "SELECT 2"}, ClientRequestToken=token)
    assert athena.start_query_execution(**request, ClientRequestToken="u" * 40)["QueryExecutionId"] != first
