"""Background runs: a `RunHandle` drives a `Trainer` in a daemon thread (see `rdqn.registry` for
the process-wide cap, queue and reaping).

The thread never touches any UI. It publishes immutable `Telemetry` snapshots under a lock, and
readers (dashboard fragments polling about once a second, or another session watching by run id)
only ever read the latest snapshot. Controls are thread-safe requests the loop honours between
two environment steps:

    start -> running <-> paused -> finished | failed | stopped
              step_once: one env step (and its update, if due), then paused
              set_speed: throttle to N env steps per second (None = full speed)

"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import traceback
import uuid
from collections.abc import Callable

from rdqn.agent import DivergenceError
from rdqn.checkpoints import save_checkpoint
from rdqn.config import RunConfig
from rdqn.run_writer import RunWriter
from rdqn.store import RunStore
from rdqn.telemetry import Telemetry
from rdqn.trainer import Trainer

__all__ = ["FINAL_STATUSES", "RunHandle"]

FINAL_STATUSES = ("finished", "failed", "stopped")


class RunHandle:
    """One training run in a daemon thread.

    Args:
        config: the run's configuration.
        store: where to record the run (None: memory only).
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
        self.idle_timeout = idle_timeout
        self.store = store
        self.owner = owner
        self.group_id = group_id
        self.snapshot_interval = snapshot_interval
        self._on_exit = on_exit
        if store is not None:
            self.id = store.create_run(**config.record_fields(), name=name, group_id=group_id)
        else:
            self.id = uuid.uuid4().hex[:12]
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._status = "created"
        self._error: str | None = None
        self._paused = False
        self._stop = False
        self._step_requests = 0
        self._speed = self._check_speed(speed)
        self._snapshot: Telemetry | None = None
        self._thread: threading.Thread | None = None
        self.last_polled = time.monotonic()
        self.created = time.time()

    # ------------------------------------------------------------------ controls
    @staticmethod
    def _check_speed(speed: float | None) -> float | None:
        if speed is not None and not (isinstance(speed, int | float) and speed > 0):
            raise ValueError(f"speed must be None (full speed) or > 0 steps/s, got {speed!r}")
        return None if speed is None else float(speed)

    def start(self, *, paused: bool = False) -> RunHandle:
        """Start the thread (once). With `paused=True` it builds the trainer and waits."""
        with self._lock:
            if self._thread is not None:
                raise RuntimeError(f"run {self.id} was already started")
            self._paused = paused
            self._status = "paused" if paused else "running"
            self.last_polled = time.monotonic()
            self._thread = threading.Thread(target=self._loop, name=f"rdqn-run-{self.id}")
            self._thread.daemon = True
            # A training thread still inside torch when the interpreter exits aborts the
            # process, so a live run is stopped at exit (and unregistered when it ends).
            atexit.register(self.stop)
            self._thread.start()
        return self

    def pause(self) -> None:
        with self._lock:
            if self._status == "running":
                self._paused = True
                self._status = "paused"

    def resume(self) -> None:
        with self._lock:
            if self._status == "paused":
                self._paused = False
                self._step_requests = 0
                self._status = "running"
                self._wake.notify_all()

    def step_once(self) -> None:
        """Advance exactly one env step (and its update, if one is due), then stay paused."""
        with self._lock:
            if self._status in ("running", "paused"):
                self._paused = True
                self._status = "paused"
                self._step_requests += 1
                self._wake.notify_all()

    def set_speed(self, speed: float | None) -> None:
        speed = self._check_speed(speed)
        with self._lock:
            self._speed = speed
            self._wake.notify_all()

    def stop(self, timeout: float | None = 10.0) -> None:
        """Ask the loop to end and wait for it (the run is recorded as 'stopped')."""
        with self._lock:
            self._stop = True
            self._wake.notify_all()
            thread = self._thread
            if thread is None and self._status == "created":
                self._status = "stopped"
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        elif thread is None and self.store is not None:
            self.store.set_status(self.id, "stopped")

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
        return self._error

    @property
    def speed(self) -> float | None:
        return self._speed

    @property
    def alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def snapshot(self, *, touch: bool = True) -> Telemetry | None:
        """The latest published snapshot (None before the trainer has started)."""
        if touch:
            self.last_polled = time.monotonic()
        with self._lock:
            return self._snapshot

    # ---------------------------------------------------------------------- loop
    def _publish(self, trainer: Trainer) -> None:
        snap = trainer.snapshot()
        with self._lock:
            self._snapshot = snap

    def _idle(self) -> bool:
        return (
            self.idle_timeout is not None
            and time.monotonic() - self.last_polled > self.idle_timeout
        )

    def _next_action(self) -> str:
        """Block while paused; returns 'stop', 'idle', 'step' or 'run'."""
        with self._lock:
            while True:
                if self._stop:
                    return "stop"
                if self._idle():
                    return "idle"
                if not self._paused:
                    return "run"
                if self._step_requests:
                    self._step_requests -= 1
                    return "step"
                self._wake.wait(timeout=0.25)

    def _loop(self) -> None:
        trainer: Trainer | None = None
        writer = RunWriter(self.store, self.id) if self.store is not None else None
        status, error = "stopped", None
        try:
            if self.store is not None:
                self.store.set_status(self.id, self._status)
            trainer = Trainer(self.config, sink=writer)
            self._publish(trainer)
            last_publish = time.monotonic()
            next_tick = time.monotonic()
            while True:
                action = self._next_action()
                if action == "stop":
                    break
                if action == "idle":
                    error = f"stopped: nobody watched this run for {self.idle_timeout:g} s"
                    break
                if trainer.done:
                    status = "finished"
                    break
                trainer.step()
                now = time.monotonic()
                if action == "step" or now - last_publish >= self.snapshot_interval:
                    self._publish(trainer)
                    last_publish = now
                    if writer is not None:
                        writer.set_progress(
                            env_steps=trainer.env_steps,
                            updates=trainer.updates,
                            episodes=trainer.episodes,
                        )
                speed = self._speed
                if speed is not None and action == "run":
                    next_tick = max(next_tick + 1.0 / speed, now - 1.0)
                    delay = next_tick - time.monotonic()
                    if delay > 0:
                        with self._lock:
                            self._wake.wait(timeout=delay)
                else:
                    next_tick = now
        except DivergenceError as err:
            status, error = "failed", str(err)
        except Exception as err:  # noqa: BLE001 - any failure must end as a recorded 'failed' run
            status = "failed"
            error = f"{type(err).__name__}: {err}"
            self._traceback = traceback.format_exc()
        finally:
            self._finish(trainer, writer, status, error)

    def _finish(
        self, trainer: Trainer | None, writer: RunWriter | None, status: str, error: str | None
    ) -> None:
        if trainer is not None:
            # A failed final snapshot must not hide how the run ended.
            with contextlib.suppress(Exception):
                self._publish(trainer)
        try:
            if writer is not None:
                if trainer is not None:
                    writer.set_progress(
                        env_steps=trainer.env_steps,
                        updates=trainer.updates,
                        episodes=trainer.episodes,
                    )
                writer.close()
            if self.store is not None:
                if trainer is not None:
                    self.store.set_manifest(self.id, trainer.manifest())
                    path = save_checkpoint(
                        trainer.checkpoint_state(), self.store.checkpoint_path_for(self.id)
                    )
                    self.store.set_checkpoint(self.id, path)
                self.store.set_status(self.id, status, error)
        finally:
            if trainer is not None:
                trainer.close()
            with self._lock:
                self._status = status
                self._error = error
            atexit.unregister(self.stop)
            if self._on_exit is not None:
                self._on_exit(self)

    def __repr__(self) -> str:
        return f"RunHandle(id={self.id!r}, status={self._status!r}, env={self.config.env.id!r})"
