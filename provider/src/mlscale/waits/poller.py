"""One poll serves many waits: the waits on one kind of resource, connection and region in a process share
a Poller, which asks AWS once per poll interval for all of them with the batch or list call the service offers.

A triggerer holds hundreds of waits. Polled one by one, a thousand training-job waits at a 30 s interval make
about 33 DescribeTrainingJob calls a second, over what SageMaker lets an account make (its management APIs'
request rates are per account and region, not adjustable: SageMaker's quotas page), and every wait then
spends its time in botocore's retries. Shared, each refresh is:

- SageMaker jobs: List*Jobs with LastModifiedTimeAfter (100 a page), so only the jobs that changed since the
  previous refresh come back; their summaries say the status (and a training job's SecondaryStatus). A job
  not in the list has not changed. A job first asked for is found in a list that looks back LOOKBACK_SECONDS,
  else described once.
- Batch: DescribeJobs, 100 ids a call; Athena: BatchGetQueryExecution, 50; FSx: Describe* by ids, 50.
- Endpoints and Greengrass, whose APIs have no batch read: one Describe per resource per interval, however
  many waits ask for it.

The refresh is made by whichever wait first finds the answers older than its interval (the others read its
answers): no thread of its own, so the trigger, the sensors' poke and `deferrable=False` waits use the same
code. A throttled refresh makes every caller back off together (THROTTLED_BACKOFF_MAX) and is tried again;
a throttle never decides a wait.

The list's time filter uses the service's own clock (the answer's Date header) less SKEW_SECONDS, so a
machine whose clock is off still sees every change.
"""

from __future__ import annotations

import random
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

from botocore.exceptions import ClientError

from mlscale.aws import errors

LOOKBACK_SECONDS = 300  # how far back a refresh lists when a wait first asks for a job
SKEW_SECONDS = 5  # the Date header's second resolution, and a change recorded as the list was answered
FORGET_SECONDS = 600  # an id nobody asked for this long (a wait cancelled) is no longer refreshed
THROTTLED_BACKOFF_MAX = 30.0
SEEN_MAX = 20_000  # list summaries kept of jobs no wait asks for (a long-lived triggerer in a busy account)
GATHER_SECONDS = 0.05  # between full refreshes, how long a wait's first look waits for others to join it


class Poller:
    """The shared answers for one kind of resource on one client; thread-safe."""

    def __init__(self, kind: Any, client: Any):
        self.kind, self.client = kind, client
        self._lock = threading.Lock()  # the tables below
        self._changed = threading.Condition(self._lock)  # a refresh ended
        self._refreshing = False
        # id -> (when, its description, or its not-found error, or None: a batch read did not return it)
        self._answers: dict[str, tuple[float, dict | ClientError | None]] = {}
        self._asked: dict[str, float] = {}  # id -> when a wait last asked
        self._since: datetime | None = None  # the service's time of the previous listing, less the skew
        self._seen: dict[str, dict] = {}  # job name -> its latest list summary (SageMaker jobs)
        self._full_at: float | None = None  # when every wanted id was last asked for
        self._retry_at, self._delay, self._throttle = 0.0, 1.0, None
        self.calls = 0  # AWS calls made (tests, the bench)

    def describe(self, resource_id: str, max_age: float) -> dict:
        """The resource's description, at most `max_age` seconds old (a list summary for SageMaker jobs: the
        fields ResourceKind.status and .reason read). Raises the service's not-found error for an unknown id,
        and its throttling error while refreshes are throttled."""
        while True:
            mine = False  # whether this call makes the refresh
            with self._changed:
                self._asked[resource_id] = time.monotonic()
                while True:  # one refresh at a time; the waits that come meanwhile read its answers or join the next
                    when, answer = self._answers.get(resource_id, (None, None))
                    if when is not None and time.monotonic() - when < max_age:
                        break
                    if not self._refreshing:
                        self._refreshing = mine = True
                        break
                    self._changed.wait()
            if not mine:
                break
            try:
                self._refresh(max_age)
            finally:
                with self._changed:
                    self._refreshing = False
                    self._changed.notify_all()
                    when, answer = self._answers.get(resource_id, (None, None))
            if when is not None:  # answered (a wait that ended meanwhile may have forgotten it: then again)
                break
        if isinstance(answer, ClientError):  # the service's own not-found error, raised afresh for each wait
            raise ClientError(answer.response, answer.operation_name)
        if answer is None:
            raise ClientError(
                {
                    "Error": {
                        "Code": self.kind.not_found_codes[0],
                        "Message": f"{self.kind.noun} {resource_id} does not exist: its "
                        f"service's batch read did not return it",
                    }
                },
                f"describe {self.kind.noun}",
            )
        return answer

    def forget(self, resource_id: str) -> None:
        """The wait ended: stop refreshing its resource."""
        with self._lock:
            self._asked.pop(resource_id, None)
            self._answers.pop(resource_id, None)

    def _refresh(self, max_age: float) -> None:
        """Ask AWS for every wanted id once per `max_age` (the full refresh); between those, only for the ids
        first asked for since (a burst of new waits is answered in batches, not a full refresh each)."""
        if time.monotonic() < self._retry_at:
            raise self._throttle
        full = self._full_at is None or time.monotonic() - self._full_at >= max_age
        if not full and self.kind.describe_many:
            time.sleep(GATHER_SECONDS)  # new waits come in bursts (a triggerer starting): one batch read for them
        started = time.monotonic()
        with self._lock:
            wanted = [i for i, asked in self._asked.items() if started - asked < FORGET_SECONDS]
            self._asked = {i: self._asked[i] for i in wanted}
            self._answers = {i: a for i, a in self._answers.items() if i in self._asked}
            previous = {i: a[1] for i, a in self._answers.items()}
            ids = wanted if full else [i for i in wanted if started - self._answers.get(i, (-1e18, None))[0] >= max_age]
        try:
            answers = self._by_listing(ids, previous, full) if self.kind.list_changed else self._by_ids(ids)
        except Exception as error:
            if errors.throttled(error):
                self._throttle = error
                self._retry_at = time.monotonic() + self._delay * random.uniform(0.5, 1.0)
                self._delay = min(self._delay * 2, THROTTLED_BACKOFF_MAX)
            raise
        self._delay = 1.0
        if full:
            self._full_at = started
        stamp = self._full_at if self.kind.list_changed else started  # a listed answer is as old as its list
        with self._lock:
            self._answers.update({i: (stamp, answers.get(i)) for i in ids})

    def _by_ids(self, ids: list[str]) -> dict[str, dict | ClientError | None]:
        answers: dict[str, dict | ClientError | None] = {}
        size = self.kind.batch_size if self.kind.describe_many else 1
        for start in range(0, len(ids), size):
            chunk = ids[start : start + size]
            self.calls += 1
            if self.kind.describe_many:
                answers.update(self.kind.describe_many(self.client, chunk))
            else:
                answers[chunk[0]] = self._describe_one(chunk[0])
        return answers

    def _describe_one(self, resource_id: str) -> dict | ClientError:
        try:
            return self.kind.describe(self.client, resource_id)
        except ClientError as error:
            # SageMaker answers ValidationException ("Could not find ...") for a job: mlscale.aws.errors
            if errors.not_found(error, (*self.kind.not_found_codes, "ValidationException", "ValidationError")):
                return error
            raise

    def _by_listing(self, ids: list[str], previous: dict, full: bool) -> dict[str, dict | ClientError]:
        """A full refresh lists the jobs changed since the previous list into `_seen` (every job of the account
        modified since the poller began, not only the wanted: a wait that comes later finds its job there).
        A wanted job not in `_seen` has not changed since then: its previous answer holds, or, for a wait's
        first look, one Describe."""
        if full:
            since = self._since
            if since is None or datetime.now(UTC) - since > timedelta(seconds=LOOKBACK_SECONDS):
                # first, or after an idle spell: look back, and trust nothing older than the look
                since = datetime.now(UTC) - timedelta(seconds=LOOKBACK_SECONDS)
                self._seen.clear()
                previous = {}
            summaries, service_time, calls = self.kind.list_changed(self.client, since)
            self.calls += calls
            self._seen.update({summary[self.kind.name_key]: summary for summary in summaries})
            if len(self._seen) > SEEN_MAX:  # keep the wanted: a job dropped here is described if a wait comes
                wanted = set(ids)
                self._seen = {name: summary for name, summary in self._seen.items() if name in wanted}
            self._since = (service_time or datetime.now(UTC)) - timedelta(seconds=SKEW_SECONDS)
        answers: dict[str, dict | ClientError] = {}
        for resource_id in ids:
            old = previous.get(resource_id)
            if resource_id in self._seen:  # a summary has no transitions list: drop an older Describe's
                kept = (
                    {k: v for k, v in old.items() if k != "SecondaryStatusTransitions"} if isinstance(old, dict) else {}
                )
                answers[resource_id] = {**kept, **self._seen[resource_id]}
            elif isinstance(old, dict):
                answers[resource_id] = old
            else:  # not changed lately (a sensor on an older job): described once
                self.calls += 1
                answers[resource_id] = self._describe_one(resource_id)
        return answers


def service_time(response: dict) -> datetime | None:
    """The service's clock: the Date header of its answer."""
    date = (response.get("ResponseMetadata") or {}).get("HTTPHeaders", {}).get("date")
    try:
        return parsedate_to_datetime(date) if date else None
    except (TypeError, ValueError):
        return None


_pollers: dict[tuple, Poller] = {}
_pollers_lock = threading.Lock()


def poller_for(kind: Any, hook_key: tuple, client: Any) -> Poller:
    """The process's Poller for this kind on the client that `hook_key` names (watch.shared_hook's key)."""
    with _pollers_lock:
        poller = _pollers.get((kind.name, hook_key))
        if poller is None:
            poller = _pollers[(kind.name, hook_key)] = Poller(kind, client)
        poller.client = client  # a remade hook's (watch.SHARED_HOOK_SECONDS): the same connection, a fresh client
        return poller
