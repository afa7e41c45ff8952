"""Background runs: a `RunHandle` drives one `RecordedRun` in a daemon thread.

The thread never touches any UI. It publishes immutable `Telemetry` snapshots under a lock, and
readers (dashboard fragments polling about once a second, or another session watching by run id)
only ever read the latest snapshot. Controls are `rdqn.runs.control.RunControls` requests the
loop honours between two environment steps; `rdqn.runs.registry` caps, queues and reaps handles.

    created -> running <-> paused -> finished | failed | stopped
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable

from rdqn.config import RunConfig
from rdqn.runs.control import RunControls, drive
from rdqn.runs.lifecycle import FINAL_STATUSES, RecordedRun
from rdqn.runs.store import RunStore
from rdqn.training.telemetry import Telemetry

__all__ = ["RunHandle"]


class RunHandle:
    """One training run in a daemon thread.

    Args:
        config: the run's configuration.
        store: where to record the run (None: memory only). The run is filed at once, so its
            id exists (and can be listed as queued) before its thread starts.
        owner: an opaque session id; the registry stops a session's runs when it goes away.
        name, group_id: stored with the run (group_id ties the runs of one comparison).
        snapshot_interval: seconds between published snapshots.
        speed: env steps per second, or None for full speed.
        idle_timeout: stop by itself after this many seconds without a `snapshot()` poll
            (None: never); a browser tab that closes sends no signal.
        on_exit: called (with this handle) when the thread ends.
    """

    def __init__(
        self,
        config: RunConfig,
        *,
        store: RunStore | None = None,
        owner: str | None = None,
        name: str | None = None,
        group_id: str | None = None,
        snapshot_interval: float = 0.5,
        speed: float | None = None,
        idle_timeout: float | None = None,
        on_exit: Callable[[RunHandle], None] | None = None,
    ) -> None:
        self.config = config
        self.owner = owner
        self.group_id = group_id
        self.snapshot_interval = snapshot_interval
        self.controls = RunControls(speed=speed, idle_timeout=idle_timeout)
        self._run = RecordedRun(config, store, name=name, group_id=group_id)
        self.id: str = self._run.create()
        self._on_exit = on_exit
        self._lock = threading.Lock()
        self._status = "created"
        self._snapshot: Telemetry | None = None
        self._thread: threading.Thread | None = None
        self.created = time.time()

    # ------------------------------------------------------------------ controls
    def start(self, *, paused: bool = False) -> RunHandle:
        """Start the thread (once). With `paused=True` it builds the trainer and waits."""
        with self._lock:
            if self._thread is not None:
                raise RuntimeError(f"run {self.id} was already started")
            self.controls.paused = paused
            self.controls.touch()
            self._status = "paused" if paused else "running"
            self._thread = threading.Thread(target=self._main, name=f"rdqn-run-{self.id}")
            self._thread.daemon = True
            # A training thread still inside torch when the interpreter exits aborts the
            # process, so a live run is stopped at exit (and unregistered when it ends).
            atexit.register(self.stop)
            self._thread.start()
        return self

    def pause(self) -> None:
        with self._lock:
            if self._status == "running":
                self.controls.pause()
                self._status = "paused"

    def resume(self) -> None:
        with self._lock:
            if self._status == "paused":
                self.controls.resume()
                self._status = "running"

    def step_once(self) -> None:
        """Advance exactly one env step (and its update, if one is due), then stay paused."""
        with self._lock:
            if self._status in ("running", "paused"):
                self.controls.step_once()
                self._status = "paused"

    def set_speed(self, speed: float | None) -> None:
        self.controls.set_speed(speed)

    def stop(self, timeout: float | None = 10.0) -> None:
        """Ask the loop to end and wait for it (the run is recorded as 'stopped')."""
        with self._lock:
            self.controls.stop()
            thread = self._thread
            never_started = thread is None and self._status == "created"
            if never_started:
                self._status = "stopped"
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        elif never_started:
            self._run.close("stopped")

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; True when it has."""
        thread = self._thread
        if thread is None:
            return self._status in FINAL_STATUSES
        thread.join(timeout)
        return not thread.is_alive()

    # ------------------------------------------------------------------- reading
    @property
    def status(self) -> str:
        return self._status

    @property
    def error(self) -> str | None:
        return self._run.error

    @property
    def speed(self) -> float | None:
        return self.controls.speed

    @property
    def last_polled(self) -> float:
        return self.controls.last_polled

    def snapshot(self, *, touch: bool = True) -> Telemetry | None:
        """The latest published snapshot (None before the trainer has started)."""
        if touch:
            self.controls.touch()
        with self._lock:
            return self._snapshot

    # ---------------------------------------------------------------------- loop
    def _publish(self, snapshot: Telemetry) -> None:
        with self._lock:
            self._snapshot = snapshot

    def _main(self) -> None:
        try:
            drive(self._run, self.controls, self._publish, snapshot_interval=self.snapshot_interval)
        finally:
            with self._lock:
                self._status = self._run.status
            atexit.unregister(self.stop)
            if self._on_exit is not None:
                self._on_exit(self)

    def __repr__(self) -> str:
        return f"RunHandle(id={self.id!r}, status={self._status!r}, env={self.config.env.id!r})"
