"""Ships a process's output lines to CloudWatch Logs, as the SageMaker agent does."""

from __future__ import annotations

import threading
import time


class LogShipper:
    """Buffers lines for one log stream and puts them in batches from a background thread."""

    def __init__(self, logs_client, group: str, stream: str, flush_seconds: float = 0.5):
        self._logs = logs_client
        self._group = group
        self._stream = stream
        self._flush_seconds = flush_seconds
        self._pending: list[dict] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._ensure_stream()
        self._thread = threading.Thread(target=self._run, name=f"logs-{stream}", daemon=True)
        self._thread.start()

    def _ensure_stream(self) -> None:
        for create, kwargs in (
            (self._logs.create_log_group, {"logGroupName": self._group}),
            (self._logs.create_log_stream, {"logGroupName": self._group, "logStreamName": self._stream}),
        ):
            try:
                create(**kwargs)
            except self._logs.exceptions.ResourceAlreadyExistsException:
                pass

    def write(self, line: str) -> None:
        event = {"timestamp": int(time.time() * 1000), "message": line.rstrip("\n") or " "}
        with self._lock:
            self._pending.append(event)

    def _flush(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        # PutLogEvents takes at most 10,000 events per call.
        for start in range(0, len(batch), 10_000):
            self._logs.put_log_events(
                logGroupName=self._group, logStreamName=self._stream, logEvents=batch[start : start + 10_000]
            )

    def _run(self) -> None:
        while not self._stopped.wait(self._flush_seconds):
            self._flush()

    def close(self) -> None:
        """Stop and put what is pending; not while the emulator stops: its server answers no more (the calls
        would only retry) and its state is saved already."""
        from mlscale_emulator.executors.processes import shutting_down

        self._stopped.set()
        if not shutting_down.is_set():
            self._thread.join()
            self._flush()
