"""form_param: an ordinary Param that Airflow copies and checks cheaply, and that the trigger API still checks."""

import copy
import pickle

import pendulum
import pytest
from airflow.sdk import DAG
from airflow.sdk.bases.operator import BaseOperator
from airflow.sdk.exceptions import ParamValidationError
from airflow.serialization.serialized_objects import DagSerialization

from mlscale.params import DRAFT_7, form_param


def test_a_form_param_validates_like_a_param():
    param = form_param(2, type="integer", minimum=1, maximum=16, description="instances")
    assert param.resolve(16) == 16
    with pytest.raises(ParamValidationError, match="17 is greater than the maximum of 16"):
        param.resolve(17)
    with pytest.raises(ParamValidationError, match="is not of type 'integer'"):
        form_param(2, type="integer").resolve("two")
    assert param.schema == {"$schema": DRAFT_7, "type": "integer", "minimum": 1, "maximum": 16}
    assert param.description == "instances"


def test_its_schema_is_read_only_and_shared_by_copies():
    param = form_param("auto", enum=["auto", "manual"])
    with pytest.raises(TypeError, match="read-only"):
        param.schema["enum"] = ["x"]
    with pytest.raises(TypeError, match="read-only"):
        param.schema.update(type="string")
    copied = copy.deepcopy(param)
    assert copied.schema is param.schema and copied is not param
    copied.resolve("manual")  # resolving a copy changes the copy's value only
    assert (copied.value, param.value) == ("manual", "auto")
    assert pickle.loads(pickle.dumps(param)).schema == param.schema


def test_every_task_gets_the_dag_form_and_the_serialized_dag_checks_a_triggered_value():
    with DAG(
        "form_param_dag",
        start_date=pendulum.datetime(2026, 1, 1),
        schedule=None,
        params={"epochs": form_param(4, type="integer", minimum=1, maximum=200)},
    ) as dag:
        task = BaseOperator(task_id="t")
    assert task.params["epochs"] == 4
    assert task.params.get_param("epochs").schema is dag.params.get_param("epochs").schema
    served = DagSerialization.from_dict(DagSerialization.to_dict(dag))  # what the API server checks a run's conf with
    assert dict(served.params.get_param("epochs").schema) == {
        "$schema": DRAFT_7,
        "type": "integer",
        "minimum": 1,
        "maximum": 200,
    }
    assert served.params.deep_merge({"epochs": 200}).validate() == {"epochs": 200}
    with pytest.raises(ParamValidationError, match="201 is greater than the maximum of 200"):
        served.params.deep_merge({"epochs": 201}).validate()
