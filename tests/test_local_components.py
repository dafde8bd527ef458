"""`mlscale airflow` supervises Airflow's components: one that dies is started again after a growing delay."""

from __future__ import annotations

from pathlib import Path

from mlscale_emulator.local_components import HEALTHY_SECONDS, RESTART_DELAYS, RESTART_LIMIT, Components


def test_a_component_that_dies_is_restarted_after_growing_delays_and_one_that_keeps_dying_stops_the_stack():
    components = Components({}, Path("/nonexistent"), 8080)
    now = 1000.0
    delays = []
    for _ in range(RESTART_LIMIT):
        components.started_at["triggerer"] = now  # each restart dies at once
        now += 1
        delays.append(components.restart_delay("triggerer", now))
    assert delays == [*RESTART_DELAYS, RESTART_DELAYS[-1]][:RESTART_LIMIT] and delays == sorted(delays)
    components.started_at["triggerer"] = now
    assert components.restart_delay("triggerer", now + 1) is None  # it keeps dying: give up
    assert components.restart_delay("scheduler", now) == RESTART_DELAYS[0]  # each component counts its own


def test_a_component_that_ran_well_since_its_restart_starts_again_from_the_first_delay():
    components = Components({}, Path("/nonexistent"), 8080)
    components.started_at["triggerer"] = 0.0
    assert components.restart_delay("triggerer", 1.0) == RESTART_DELAYS[0]
    components.started_at["triggerer"] = 2.0
    assert components.restart_delay("triggerer", 3.0) == RESTART_DELAYS[1]
    components.started_at["triggerer"] = 10.0
    assert components.restart_delay("triggerer", 10.0 + HEALTHY_SECONDS) == RESTART_DELAYS[0]
