"""Profiles, drift and checks: each check fails with its name, its value and its threshold."""

import numpy as np
import pytest

from mlscale.quality.profile import Profile, QualityThresholds, drift, feature_profile, psi, run_checks
from mlscale.specs import SpecError


def profile(rows=5000, missing=0.0, duplicates=0.0, labels=None, shift=0.0, seed=0) -> Profile:
    rng = np.random.default_rng(seed)
    label_array = labels if labels is not None else rng.integers(0, 10, rows)
    images = np.clip(rng.beta(2, 5, size=(len(label_array), 8, 8)) + shift, 0, 1)
    return Profile(
        rows=rows,
        missing_fraction={"label": missing, "pixels": 0.0},
        duplicate_fraction=duplicates,
        **feature_profile(label_array, images),
    )


def failed(checks):
    return {c.name: c.message() for c in checks if not c.passed}


def test_a_clean_dataset_passes_every_check():
    checks = run_checks(profile(), drift(profile(seed=1), profile(seed=2)), QualityThresholds())
    assert failed(checks) == {}
    assert {c.name for c in checks} >= {
        "row_count",
        "duplicate_fraction",
        "min_label_share",
        "drift_label_psi",
        "drift_intensity_psi",
        "missing_fraction[label]",
    }


@pytest.mark.parametrize(
    "kwargs, check, message",
    [
        ({"rows": 10}, "row_count", "row_count failed: 10 (must be >= 1000)"),
        ({"missing": 0.05}, "missing_fraction[label]", "missing_fraction[label] failed: 0.05 (must be <= 0.01)"),
        ({"duplicates": 0.2}, "duplicate_fraction", "duplicate_fraction failed: 0.2 (must be <= 0.01)"),
        (
            {"labels": np.array([0] * 990 + [1] * 10)},
            "min_label_share",
            "min_label_share failed: 0.01 (must be >= 0.05)",
        ),
    ],
)
def test_each_failed_check_names_itself_its_value_and_threshold(kwargs, check, message):
    checks = run_checks(profile(**kwargs), {}, QualityThresholds())
    assert failed(checks)[check] == message


def test_drift_is_measured_with_psi_against_the_previous_run():
    before, same, shifted = profile(seed=1), profile(seed=2), profile(seed=3, shift=0.3)
    assert drift(same, None) == {}
    assert drift(same, before)["intensity_psi"] < 0.05
    values = drift(shifted, before)
    assert values["intensity_psi"] > 0.2
    assert (
        "drift_intensity_psi failed" in failed(run_checks(shifted, values, QualityThresholds()))["drift_intensity_psi"]
    )


def test_psi_of_identical_histograms_is_zero_and_grows_with_the_shift():
    assert psi([10, 20, 30], [10, 20, 30]) == pytest.approx(0.0)
    assert 0 < psi([10, 20, 30], [12, 20, 28]) < psi([10, 20, 30], [30, 20, 10])


def test_profile_round_trips_through_json():
    import json

    original = profile()
    assert Profile.from_dict(json.loads(json.dumps(original.to_dict()))) == original


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"min_rows": 0}, "min_rows: must be an integer >= 1"),
        ({"max_duplicate_fraction": 1.5}, "max_duplicate_fraction: must be a fraction from 0 to 1"),
        ({"max_drift_psi": 0}, "max_drift_psi: must be > 0"),
    ],
)
def test_bad_thresholds(kwargs, message):
    with pytest.raises(SpecError, match=message):
        QualityThresholds(**kwargs).validate()


def test_report_renders_png_plots_and_html():
    from mlscale.quality.report import render_html, render_plots

    current, previous = profile(seed=1), profile(seed=2)
    plots = render_plots(current, previous)
    assert set(plots) == {"label_balance.png", "features.png", "drift.png"}
    assert all(png.startswith(b"\x89PNG") and len(png) > 2000 for png in plots.values())
    page = render_html(
        "Data quality", current, run_checks(current, drift(current, previous), QualityThresholds()), plots
    )
    assert "PASSED" in page and 'src="drift.png"' in page and "duplicate_fraction" in page
