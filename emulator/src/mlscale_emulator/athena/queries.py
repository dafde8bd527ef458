"""Query executions that really run: status QUEUED -> RUNNING -> SUCCEEDED/FAILED with the engine's reason."""

from __future__ import annotations

import json
import threading

from moto.athena import models as athena_models
from moto.athena import responses as athena_responses
from moto.core.exceptions import JsonRESTError

from mlscale_emulator.executors.athena import QueryRun
from mlscale_emulator.state import INTERRUPTED, backends_of

PAGE_LIMIT = 1000


def _start_query_execution(self, query: str, context, config, workgroup, execution_parameters) -> str:
    execution_id = _moto_start(
        self,
        query=query,
        context=context,
        config=config,
        workgroup=workgroup,
        execution_parameters=execution_parameters,
    )
    execution = self.executions[execution_id]
    execution._transitions = []  # moto's state manager must not move it: the run does
    execution.status = "QUEUED"
    execution.state_change_reason = None
    execution.data_scanned = 0
    execution.engine_millis = 0
    QueryRun(execution, region=self.region_name).start()
    return execution_id


def _response_start_query_execution(self):
    """StartQueryExecution is idempotent on its ClientRequestToken: the same token answers the query it started,
    and starts no other (https://docs.aws.amazon.com/athena/latest/APIReference/API_StartQueryExecution.html)."""
    token = self._get_param("ClientRequestToken")
    backend = self.athena_backend
    with _tokens_lock:
        tokens = backend.__dict__.setdefault("mlscale_tokens", {})  # kept with the backend: a restart keeps it
        if token and tokens.get(token) in backend.executions:
            if backend.executions[tokens[token]].query != self._get_param("QueryString"):
                return self.error(
                    "The ClientRequestToken was used before with a different QueryString; a token "
                    "starts one query only",
                    400,
                )
            return json.dumps({"QueryExecutionId": tokens[token]})
        answer = _moto_response_start(self)
        if token and isinstance(answer, str):
            tokens[token] = json.loads(answer)["QueryExecutionId"]
        return answer


def _get_query_execution(self, exec_id: str):
    if exec_id not in self.executions:  # as Athena answers an unknown id (moto raised KeyError: a 500)
        raise JsonRESTError("InvalidRequestException", f"QueryExecution {exec_id} was not found")
    return self.executions[exec_id]  # no moto advance(): the run moves the state


def _response_get_query_execution(self) -> str:
    exec_id = self._get_param("QueryExecutionId")
    return json.dumps({"QueryExecution": _query_execution(self.athena_backend.get_query_execution(exec_id), exec_id)})


def _response_batch_get_query_execution(self) -> str:
    """Up to 50 ids (botocore's model bounds the list); an unknown id is answered in UnprocessedQueryExecutionIds,
    as https://docs.aws.amazon.com/athena/latest/APIReference/API_BatchGetQueryExecution.html describes."""
    found, unprocessed = [], []
    for exec_id in self._get_param("QueryExecutionIds") or []:
        execution = self.athena_backend.executions.get(exec_id)
        if execution is None:
            unprocessed.append(
                {
                    "QueryExecutionId": exec_id,
                    "ErrorCode": "InvalidRequestException",
                    "ErrorMessage": f"QueryExecution {exec_id} was not found",
                }
            )
        else:
            found.append(_query_execution(execution, exec_id))
    return json.dumps({"QueryExecutions": found, "UnprocessedQueryExecutionIds": unprocessed})


def _query_execution(execution, exec_id: str) -> dict:
    first_word = execution.query.strip().split(None, 1)[0].upper() if execution.query.strip() else ""
    status = {"State": execution.status, "SubmissionDateTime": execution.start_time}
    if execution.status in ("SUCCEEDED", "FAILED", "CANCELLED"):
        status["CompletionDateTime"] = execution.end_time
    if getattr(execution, "state_change_reason", None):
        status["StateChangeReason"] = execution.state_change_reason
        status["AthenaError"] = {
            "ErrorCategory": 2,
            "ErrorType": 1006,
            "Retryable": False,
            "ErrorMessage": execution.state_change_reason,
        }
    return {
        "QueryExecutionId": exec_id,
        "Query": execution.query,
        "StatementType": "DDL" if first_word in ("ALTER", "CREATE", "DESCRIBE", "DROP", "MSCK", "SHOW") else "DML",
        "ResultConfiguration": execution.config or {},
        "QueryExecutionContext": execution.context or {},
        "Status": status,
        "Statistics": {
            "EngineExecutionTimeInMillis": getattr(execution, "engine_millis", 0),
            "DataScannedInBytes": getattr(execution, "data_scanned", 0),
            "TotalExecutionTimeInMillis": getattr(execution, "engine_millis", 0),
        },
        "WorkGroup": execution.workgroup.name if execution.workgroup else "primary",
    }


def _response_get_query_results(self):
    exec_id = self._get_param("QueryExecutionId")
    execution = self.athena_backend.get_query_execution(exec_id)
    if execution.status != "SUCCEEDED":
        message = (
            f"Query did not finish successfully. Final query state: {execution.status}"
            if execution.status in ("FAILED", "CANCELLED")
            else f"Query has not yet finished. Current state: {execution.status}"
        )
        return self.error(message, 400)
    columns, rows = getattr(execution, "result_set", ([], []))
    rows = ([[c["Name"] for c in columns]] if columns else []) + rows
    start = int(self._get_param("NextToken") or 0)
    size = min(int(self._get_param("MaxResults") or PAGE_LIMIT), PAGE_LIMIT)
    page = rows[start : start + size]
    body = {
        "ResultSet": {
            "Rows": [{"Data": [{} if v is None else {"VarCharValue": v} for v in row]} for row in page],
            "ResultSetMetadata": {
                "ColumnInfo": [
                    {
                        "CatalogName": "hive",
                        "SchemaName": "",
                        "TableName": "",
                        "Name": c["Name"],
                        "Label": c["Label"],
                        "Type": c["Type"],
                        "Precision": 0,
                        "Scale": 0,
                        "Nullable": "UNKNOWN",
                        "CaseSensitive": False,
                    }
                    for c in columns
                ]
            },
        },
        "UpdateCount": 0,
    }
    if start + size < len(rows):
        body["NextToken"] = str(start + size)
    return json.dumps(body)


def recover() -> None:
    """After a restore: a query that ran when the emulator stopped ends FAILED."""
    for backend in backends_of(athena_models.athena_backends):
        for execution in backend.executions.values():
            if execution.status in ("QUEUED", "RUNNING"):
                execution.status, execution.state_change_reason = "FAILED", INTERRUPTED


_moto_start = athena_models.AthenaBackend.start_query_execution
_moto_response_start = athena_responses.AthenaResponse.start_query_execution
_tokens_lock = threading.Lock()


def install() -> None:
    athena_models.AthenaBackend.start_query_execution = _start_query_execution
    athena_responses.AthenaResponse.start_query_execution = _response_start_query_execution
    athena_models.AthenaBackend.get_query_execution = _get_query_execution
    athena_responses.AthenaResponse.get_query_execution = _response_get_query_execution
    athena_responses.AthenaResponse.batch_get_query_execution = _response_batch_get_query_execution
    athena_responses.AthenaResponse.get_query_results = _response_get_query_results
