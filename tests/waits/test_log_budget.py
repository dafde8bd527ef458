"""Log tailing takes turns under CloudWatch Logs' quota: every wait's lines come, none is starved."""

from __future__ import annotations

from mlscale.waits import log_budget
from mlscale.waits.log_budget import LogBudget


class Clock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


def test_a_hundred_waits_take_turns_within_the_rate(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(log_budget, "time", clock)
    budget = LogBudget(calls_per_second=20)
    waits = [object() for _ in range(100)]
    served = {id(w): [] for w in waits}
    calls = 0
    for second in range(30):  # each wait polls once a second, as a triggerer's waits at a 1 s interval
        for index, wait in enumerate(waits):
            clock.now = second + index / len(waits)
            if budget.take(wait, cost=2):
                served[id(wait)].append(clock.now)
                calls += 2
    assert calls <= 20 * 30 + budget.burst  # never over the rate
    assert calls >= 20 * 30 * 0.9  # and the budget is used, not wasted
    counts = sorted(len(times) for times in served.values())
    assert counts[0] >= 2 and counts[-1] - counts[0] <= 2  # round robin: each wait in turn, none starved
    assert all(times[0] < 12 for times in served.values())  # a full round of turns takes about 10 s here


def test_a_tail_dearer_than_the_burst_still_gets_its_turn(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(log_budget, "time", clock)
    budget = LogBudget(calls_per_second=2)
    wait = object()
    assert budget.take(wait, cost=100)  # a job of many streams: it overdraws, then waits its refill
    clock.now += 1
    assert not budget.take(wait, cost=1)
    clock.now += 60
    assert budget.take(wait, cost=1)


def test_a_wait_that_ended_gives_up_its_place(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(log_budget, "time", clock)
    budget = LogBudget(calls_per_second=1)
    first, second = object(), object()
    budget.tokens = 1
    assert budget.take(first, cost=1)
    assert not budget.take(second, cost=1)
    budget.forget(first)
    assert first is not None and list(budget.turns) == [id(second)]
