import re

import pytest

from mlscale.naming import MAX_LENGTH, NAME_PATTERN, resource_name

RUN_ID = "scheduled__2026-11-30T00:00:00+00:00"


def test_name_is_valid_for_sagemaker_and_readable():
    name = resource_name("mlscale_pipeline", "train", RUN_ID)
    assert NAME_PATTERN.match(name)
    assert len(name) <= MAX_LENGTH
    assert name.startswith("mlscale-pipeline-train-")


def test_same_identity_same_name():
    assert resource_name("d", "t", RUN_ID, 3) == resource_name("d", "t", RUN_ID, 3)


@pytest.mark.parametrize(
    "other",
    [
        ("d", "t", "scheduled__2026-12-07T00:00:00+00:00", -1),
        ("d", "t2", RUN_ID, -1),
        ("d", "t", RUN_ID, 0),
        ("d", "t", RUN_ID.replace("-", "_"), -1),
    ],  # a_b and a-b slug alike: the hash tells them apart
)
def test_different_identity_different_name(other):
    assert resource_name("d", "t", RUN_ID, -1) != resource_name(*other)


def test_long_names_are_truncated_keeping_the_hash_and_suffixes():
    long_dag = "a_very_long_dag_id_" * 10
    name = resource_name(long_dag, "train_the_model", RUN_ID, map_index=12, attempt=3)
    assert len(name) == MAX_LENGTH
    assert NAME_PATTERN.match(name)
    assert name.endswith("-m12-a3")
    # same truncated prefix, different task: still distinct
    assert name != resource_name(long_dag, "train_the_modek", RUN_ID, map_index=12, attempt=3)


def test_characters_outside_the_charset_are_replaced():
    name = resource_name("dag.with spaces", "task@x", "manual__2026-01-01T00:00:00.123+00:00")
    assert NAME_PATTERN.match(name)
    assert " " not in name and "@" not in name and "." not in name and ":" not in name


def test_one_job_name_rule_per_service_and_later_attempts_fit_it():
    from mlscale.naming import attempt_job_name, check_job_name
    from mlscale.specs.errors import SpecError

    check_job_name("a" * 63, "SageMaker")
    check_job_name("my_job-" + "b" * 121, "Batch")
    for value, service, rule in [
        ("a" * 64, "SageMaker", "1-63 letters, digits and '-'"),
        ("my_job", "SageMaker", "1-63 letters, digits and '-'"),
        ("-job", "Batch", "1-128 letters, digits, '-' and '_'"),
        ("b" * 129, "Batch", "1-128"),
        (7, "Batch", "1-128"),
    ]:
        with pytest.raises(SpecError, match=f"job_name: must be {re.escape(rule)}"):
            check_job_name(value, service)
    assert attempt_job_name("job", 1, "Batch") == "job"
    assert attempt_job_name("a" * 63, 12, "SageMaker") == "a" * 59 + "-a12"
    assert attempt_job_name("b" * 128, 2, "Batch") == "b" * 125 + "-a2"


@pytest.mark.parametrize(("value", "deferrable"), [("True", True), ("t", True), ("0", False), ("off", False)])
def test_default_deferrable_reads_the_one_boolean_vocabulary(monkeypatch, value, deferrable):
    from mlscale.operators.deferral import default_deferrable

    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", value)
    assert default_deferrable() is deferrable


def test_a_default_deferrable_that_is_not_a_boolean_is_refused_naming_the_option(monkeypatch):
    from mlscale.operators.deferral import default_deferrable
    from mlscale.specs.errors import SpecError

    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "maybe")
    with pytest.raises(SpecError, match=r"\[operators\] default_deferrable: must be true or false"):
        default_deferrable()
