"""The security probe's bad inputs that were accepted, or refused late or vaguely: each is refused before any AWS
call or work, naming the field and the rule. A trailing newline passes `^...$` in Python: every rule anchors
with `\\Z` or `fullmatch`."""

from __future__ import annotations

import pytest

from mlscale.specs import QualitySpec, SpecError, TrainingSpec
from tests.conftest import ROLE_ARN, TRAINING_DIR
from tests.specs.test_stage_specs import compilation, endpoint, fsx


def training(**overrides) -> TrainingSpec:
    fields = dict(
        entry_point="train.py",
        source_dir=str(TRAINING_DIR),
        role_arn=ROLE_ARN,
        image_uri="image:1",
        output_path="s3://bucket-1/models",
    )
    return TrainingSpec(**{**fields, **overrides})


def quality(**overrides) -> QualitySpec:
    fields = dict(
        database="mlscale",
        table="raw_digits",
        data_prefix="s3://bucket-1/etl/",
        report_prefix="s3://bucket-1/quality/",
        output_location="s3://bucket-1/athena/",
    )
    return QualitySpec(**{**fields, **overrides})


BAD = [
    (training, {"output_path": "s3://bucket-1/models\n"}, "output_path: must be an s3://bucket/prefix URI"),
    (training, {"output_path": "s3://probe..bkt/models"}, "output_path: names a bucket S3 cannot have"),
    (training, {"output_path": "s3://192.168.1.10/models"}, "output_path: names a bucket S3 cannot have"),
    (training, {"role_arn": ROLE_ARN + "\n"}, "role_arn: must be an IAM role ARN"),
    (training, {"entry_point": "../escape.py"}, "entry_point: must be a path relative to source_dir, without '..'"),
    (training, {"entry_point": "/etc/escape.py"}, "entry_point: must be a path relative to source_dir"),
    (training, {"instance_type": "ml.bogus.xlarge"}, "instance_type: is not a SageMaker TrainingInstanceType"),
    (training, {"instance_count": True}, "instance_count: must be an integer"),
    (quality, {"table": "raw_digits\n"}, "table: "),
    (quality, {"database": "mlscale\n"}, "database: "),
    (quality, {"thresholds": {"min_rows": True}}, "thresholds['min_rows']: must be an integer >= 1"),
    (
        compilation,
        {"input_shapes": {"input0": [1, True]}},
        "input_shapes['input0']: must be a list of positive integers",
    ),
    (endpoint, {"endpoint_name": "e-1\n"}, "endpoint_name: must be 1-63 letters, digits and '-'"),
    (endpoint, {"sample_body": "{not json"}, "sample_body: must be JSON (application/json)"),
    (fsx, {"storage_capacity_gib": True}, "storage_capacity_gib"),
]


@pytest.mark.parametrize(("make", "overrides", "message"), BAD, ids=[m for _, _, m in BAD])
def test_the_probes_bad_inputs_are_refused_naming_field_and_rule(make, overrides, message):
    with pytest.raises(SpecError, match=None) as error:
        spec = make(**overrides)
        spec.validate()
    assert message in str(error.value), str(error.value)


def test_a_sample_body_in_another_content_type_is_not_parsed_as_json():
    endpoint(sample_body="1,2,3", sample_content_type="text/csv").validate()


def test_resource_names_refuse_a_trailing_newline():
    from mlscale.naming import NAME_PATTERN

    assert NAME_PATTERN.match("train-1") and not NAME_PATTERN.match("train-1\n")


@pytest.mark.parametrize(
    ("option", "value", "rule"),
    [
        ("bucket", "my bucket", "must be an S3 bucket name"),
        ("bucket", "probe..bkt", "no '..'"),
        ("role_arn", "not-an-arn", "must be an IAM role ARN"),
        ("first_event_delay", "abc", "must be a number of seconds"),
        ("first_event_delay", "-1", "0 or more"),
        ("batch_cluster", "{bad json", "must be a JSON object"),
        ("cache_location", "bucket/prefix", "must be empty or an s3://bucket/prefix URI"),
    ],
)
def test_settings_are_checked_when_read_naming_the_option(monkeypatch, option, value, rule):
    """The provider's own ([mlscale]) and the example project's ([mlscale_example]), by the same rules."""
    import mlscale.settings as provider
    import mlscale_example.settings as example
    from mlscale.settings import SettingError

    settings = provider if option in provider.OPTIONS else example
    section = "mlscale" if settings is provider else "mlscale_example"
    monkeypatch.setenv(f"AIRFLOW__{section.upper()}__{option.upper()}", value)
    with pytest.raises(SettingError) as error:
        settings.setting(option)
    assert str(error.value).startswith(f"[{section}] {option} = {value!r}: ") and rule in str(error.value)
    assert f"AIRFLOW__{section.upper()}__{option.upper()})" in str(error.value)


def test_the_fsx_stage_refuses_an_enabled_flag_that_is_not_a_boolean():
    from mlscale.operators.fsx import FSxLustreStageOperator as FSxLustreOperator

    operator = FSxLustreOperator(task_id="fsx", spec=fsx(), enabled="maybe")
    with pytest.raises(SpecError, match="enabled: must be true or false"):
        operator.execute({})
    skipped = FSxLustreOperator(task_id="fsx_off", spec=fsx(), enabled="False").execute({})
    assert skipped["file_system_id"] is None


@pytest.mark.parametrize(
    ("conf", "said"),
    [
        ("{bad", "the params are not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"epoch": 3}', "unknown param 'epoch'"),
        ('{"instance_count": true}', "param 'instance_count': True is not of type 'integer'"),
        ('{"database": "raw\\n"}', "param 'database':"),
        ('{"records_per_day": 0}', "records_per_day must be a whole number of records"),
    ],
)
def test_mlscale_demos_params_are_checked_naming_what_is_wrong(conf, said):
    from mlscale_example.local_project import run_conf

    with pytest.raises(ValueError, match=None) as error:
        run_conf(conf)
    assert said in str(error.value) and "\n" not in str(error.value)


def test_mlscale_demo_says_it_in_one_line_before_it_starts_anything(tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    env = {**os.environ, "MLSCALE_HOME": str(tmp_path), "MLSCALE_REPO": str(REPO)}
    env.pop("AIRFLOW_HOME", None)
    done = subprocess.run(
        [sys.executable, "-m", "mlscale_emulator.cli", "demo", '{"epoch": 3}'],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.startswith("mlscale demo: unknown param 'epoch'")
    assert done.stderr.count("\n") == 1 and not (tmp_path / "emulator").exists()
