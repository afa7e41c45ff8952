"""The run registry: the app's one shared object.

It caps concurrent training threads (a request beyond the cap raises `ServerBusy` at once, never
hangs), queues comparison runs until a slot frees, finds runs by id for read-only watchers, and
stops runs that nobody has polled for a while (a closed browser tab sends no signal).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

from rdqn.config import RunConfig
from rdqn.runs.handle import RunHandle
from rdqn.runs.lifecycle import FINAL_STATUSES
from rdqn.runs.store import RunStore
from rdqn.validation import check_integer

__all__ = ["RunRegistry", "ServerBusy"]


class ServerBusy(RuntimeError):
    """The registry's cap on concurrent runs is reached."""


class RunRegistry:
    """The process-wide set of runs: a cap on training threads, a queue, lookup and reaping.

    Args:
        store: the run store every run is recorded in (None: memory only).
        max_active: most training threads alive at once.
        idle_timeout: seconds without a `snapshot()` poll after which `reap_idle` stops a run.
        keep_finished: finished runs kept for lookup (oldest forgotten first).
    """

    def __init__(
        self,
        store: RunStore | None = None,
        *,
        max_active: int = 4,
        idle_timeout: float = 120.0,
        keep_finished: int = 64,
    ) -> None:
        self.store = store
        self.max_active = check_integer("max_active", max_active, minimum=1)
        self.idle_timeout = idle_timeout
        self.keep_finished = keep_finished
        self._lock = threading.RLock()
        self._runs: dict[str, RunHandle] = {}
        self._queue: list[RunHandle] = []

    def _active(self) -> list[RunHandle]:
        return [h for h in self._runs.values() if h.status in ("running", "paused")]

    def start(
        self, config: RunConfig, *, owner: str | None = None, paused: bool = False, **kwargs: Any
    ) -> RunHandle:
        """Start a run now, or raise `ServerBusy` when `max_active` threads are training."""
        with self._lock:
            active = len(self._active())
            if active >= self.max_active:
                raise ServerBusy(
                    f"server busy: {active} runs active (limit {self.max_active}); "
                    "stop a run or try again in a moment"
                )
            handle = self._handle(config, owner, kwargs)
            self._runs[handle.id] = handle
            handle.start(paused=paused)
            self._forget_old()
            return handle

    def enqueue(
        self, configs: Iterable[RunConfig], *, owner: str | None = None, **kwargs: Any
    ) -> list[RunHandle]:
        """Create runs that start as slots free up (FIFO); returns their handles at once."""
        with self._lock:
            handles = [self._handle(config, owner, kwargs) for config in configs]
            for handle in handles:
                self._runs[handle.id] = handle
            self._queue.extend(handles)
            self.pump()
            return handles

    def _handle(self, config: RunConfig, owner: str | None, kwargs: dict[str, Any]) -> RunHandle:
        kwargs.setdefault("idle_timeout", self.idle_timeout)
        return RunHandle(config, store=self.store, owner=owner, on_exit=self._on_exit, **kwargs)

    def pump(self) -> None:
        """Start queued runs while there is room."""
        with self._lock:
            while self._queue and len(self._active()) < self.max_active:
                handle = self._queue.pop(0)
                if handle.status == "created":
                    handle.start()

    def _on_exit(self, handle: RunHandle) -> None:
        self.pump()

    def get(self, run_id: str) -> RunHandle | None:
        with self._lock:
            return self._runs.get(run_id)

    def runs(self, owner: str | None = None) -> list[RunHandle]:
        with self._lock:
            return [h for h in self._runs.values() if owner is None or h.owner == owner]

    def stop(self, run_id: str) -> None:
        handle = self.get(run_id)
        if handle is not None:
            with self._lock:
                if handle in self._queue:
                    self._queue.remove(handle)
            handle.stop()

    def stop_owner(self, owner: str) -> int:
        """Stop every run of one session (its tab went away); returns how many were stopped."""
        handles = [h for h in self.runs(owner) if h.status not in FINAL_STATUSES]
        # Drop the queued ones first, so that stopping a running one does not start them.
        handles.sort(key=lambda h: h.status != "created")
        for handle in handles:
            self.stop(handle.id)
        return len(handles)

    def reap_idle(self, now: float | None = None) -> list[str]:
        """Stop runs nobody has polled for `idle_timeout` seconds; returns their ids."""
        now = time.monotonic() if now is None else now
        stale = [
            h
            for h in self.runs()
            if h.status in ("running", "paused") and now - h.last_polled > self.idle_timeout
        ]
        for handle in stale:
            self.stop(handle.id)
        return [h.id for h in stale]

    def _forget_old(self) -> None:
        finished = [h for h in self._runs.values() if h.status in FINAL_STATUSES]
        finished.sort(key=lambda h: h.created)
        for handle in finished[: max(0, len(finished) - self.keep_finished)]:
            del self._runs[handle.id]

    def shutdown(self) -> None:
        """Stop everything (queued runs are dropped)."""
        with self._lock:
            self._queue.clear()
            handles = list(self._runs.values())
        for handle in handles:
            handle.stop()
