"""The pipeline's trigger form takes its default poll interval from `[mlscale_example] poll_interval`."""

import pytest

from mlscale_example.pipeline.form import pipeline_form


def test_the_poll_interval_default_is_the_setting(monkeypatch):
    assert pipeline_form("db")["poll_interval"].value == 5
    monkeypatch.setenv("AIRFLOW__MLSCALE_EXAMPLE__POLL_INTERVAL", "2")  # what `mlscale airflow` sets for the emulator
    assert pipeline_form("db")["poll_interval"].value == 2


@pytest.mark.parametrize("value", ["0", "2.5", "soon", "301"])
def test_a_bad_poll_interval_setting_names_the_setting_and_the_rule(monkeypatch, value):
    monkeypatch.setenv("AIRFLOW__MLSCALE_EXAMPLE__POLL_INTERVAL", value)
    with pytest.raises(
        ValueError, match=r"\[mlscale_example\] poll_interval = .*: must be a whole number of seconds from 1 to 300"
    ):
        pipeline_form("db")
