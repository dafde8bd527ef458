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
