"""Log tailing shares one budget per account and region, under CloudWatch Logs' request quota.

GetLogEvents and DescribeLogStreams are each limited to 25 requests a second per account and region
(https://docs.aws.amazon.com/general/latest/gr/cwl_region.html, Service quotas). A triggerer with hundreds
of waits, each tailing its job's streams at every poll, asks for far more. The waits of one connection and
region take turns instead (round robin: the wait served longest ago goes first), within CALLS_PER_SECOND:
a wait's lines may come a few polls later, but every wait's lines come, and none fails or stalls for them.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

CALLS_PER_SECOND = 20.0  # of the 25 a second each call allows: room for the user's own clients
BURST_SECONDS = 1.0  # a burst within the quota's own bucket (25)
FORGET_SECONDS = 600.0  # a wait that stopped asking (its trigger cancelled) gives up its turn


class LogBudget:
    def __init__(self, calls_per_second: float = CALLS_PER_SECOND):
        self.rate, self.burst = calls_per_second, calls_per_second * BURST_SECONDS
        self.tokens, self.at = self.burst, time.monotonic()
        self.turns: OrderedDict[int, float] = OrderedDict()  # wait -> when it last asked; served longest ago first
        self._lock = threading.Lock()

    def take(self, wait: object, cost: int) -> bool:
        """Whether `wait` may make `cost` Logs calls now. A wait is served when its turn comes: the waits ahead of
        it, each needing a call at least, fit in the tokens left."""
        with self._lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
            self.at = now
            for key in [k for k, asked in self.turns.items() if now - asked > FORGET_SECONDS]:
                del self.turns[key]
            key = id(wait)
            self.turns[key] = now  # a new wait joins at the end; a known one keeps its place
            need = min(cost, self.burst)  # a tail dearer than the burst still gets its turn, and overdraws
            ahead = 0
            for other in self.turns:
                if other == key:
                    break
                ahead += 1  # each wait ahead keeps at least a call's worth
                if ahead + need > self.tokens:
                    return False
            if ahead + need > self.tokens:
                return False
            self.tokens -= cost
            self.turns.move_to_end(key)
            return True

    def forget(self, wait: object) -> None:
        with self._lock:
            self.turns.pop(id(wait), None)


_budgets: dict[tuple, LogBudget] = {}
_budgets_lock = threading.Lock()


def budget_for(key: tuple) -> LogBudget:
    """The process's budget for one connection and region (the logs hook's key)."""
    with _budgets_lock:
        return _budgets.setdefault(key, LogBudget())
