"""make bench's own logic: ratios, goals, the JSON it writes and its last line (the benchmarks are not run here)."""

import json
import sys

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from goals import Figure, summary, write  # noqa: E402


def test_a_goal_bounds_the_ratio_against_the_baseline():
    slower = Figure("dag_parse_cold", value=60.0, baseline=50.0, goal="<= 1.2", unit="ms")
    assert slower.ratio == pytest.approx(1.2) and slower.met
    assert not Figure("dag_parse_warm", value=30.0, baseline=10.0, goal="<= 2").met
    assert Figure("loader", value=5200, baseline=1000, goal=">= 5").met
    assert not Figure("shard_vs_copy", value=0.5, baseline=1.0, goal=">= 0.7").met


def test_without_a_baseline_the_goal_bounds_the_value():
    assert Figure("heavy_modules", value=0, baseline=None, goal="<= 0").met
    assert not Figure("heavy_modules", value=2, baseline=None, goal="<= 0").met


def test_a_malformed_goal_is_named():
    with pytest.raises(ValueError, match="dag_parse: goal 'about 1' is not"):
        _ = Figure("dag_parse", value=1, baseline=1, goal="about 1").met


def test_the_json_and_the_last_line(tmp_path):
    figures = [Figure("a", 1.0, 2.0, "<= 1"), Figure("b", 3.0, 1.0, "<= 2"), Figure("c", 1.0, 0.0, "<= 1")]
    write(figures, tmp_path / "bench.json")
    data = json.loads((tmp_path / "bench.json").read_text())
    assert [set(d) >= {"name", "value", "baseline", "ratio", "goal", "met"} for d in data] == [True] * 3
    assert [(d["ratio"], d["met"]) for d in data] == [(0.5, True), (3.0, False), (None, False)]
    assert summary(figures) == "bench: 1 of 3 goals met"


def test_the_demos_job_time_is_the_union_of_its_jobs_and_each_task_gets_the_job_time_inside_it():
    from demo_bench import _utc, covered, overhead_breakdown

    # two overlapping jobs and one apart: 0-10 and 5-12 cover 12 s, 20-23 3 s
    jobs = [("training", 0.0, 10.0), ("processing", 5.0, 12.0), ("transform", 20.0, 23.0)]
    assert covered([(a, b) for _, a, b in jobs]) == 15.0
    assert covered([(a, b) for _, a, b in jobs], within=(8.0, 21.0)) == 5.0
    lines = overhead_breakdown({"train": (0.0, 14.0), "evaluate": (19.0, 25.0), "plan": (30.0, 31.0)}, jobs)
    assert [line.split()[0] for line in lines] == ["train", "evaluate", "plan"]  # longest first
    assert "jobs  12.0 s, orchestration   2.0 s" in lines[0] and "jobs   0.0 s, orchestration   1.0 s" in lines[2]
    # Airflow's SQLite columns are UTC, with or without an offset
    assert _utc("2026-12-04 13:00:00.5") == _utc("2026-12-04T13:00:00.500000+00:00") == 1796389200.5
