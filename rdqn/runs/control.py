"""Driving a run step by step: requests from any thread, honoured between two environment steps.

`RunControls` holds what the run's owner asked for (pause, resume, one step, a speed, stop);
`drive` is the loop that opens a `RecordedRun`, steps its trainer as the controls say, publishes
`Telemetry` snapshots and closes the run however it ends:

    running <-> paused           pause / resume (recorded in the store as they happen; a pause
                                 also saves the rows and a resume checkpoint)
    step_once                    one env step (and its update, if due), then paused
    set_speed(n)                 at most n env steps per second (None: full speed)
    stop(reason)                 ends the run as 'stopped', with the reason if one is given
    request(PLAY | MEMORIES)     a greedy episode now, or the memory explorer's view, served
                                 between two steps, paused or not (`rdqn.training.watcher`,
                                 `rdqn.training.memories`)

A run plays greedy episodes for its watchers at the watcher's cadence (the first at once), and a
last one when it finishes or stops, so an ended run can still be watched; its memory view is
built when asked for and when it ends. Both travel in the snapshots (the memory view only in the
one after it was built: it is large, and the server keeps the latest).

The loop blocks while paused, so a paused run costs no CPU. A worker (`rdqn.serve.worker`) runs
`drive` and turns the server's commands into these requests.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rdqn.runs.lifecycle import RecordedRun, ending
from rdqn.training.memories import memories
from rdqn.training.memory_view import Memories, SequenceMemories
from rdqn.training.telemetry import Telemetry
from rdqn.training.watcher import EpisodeWatcher
from rdqn.validation import Real

if TYPE_CHECKING:
    from rdqn.training.trainer import Trainer

__all__ = ["RunControls", "drive"]

STOP, RUN, STEP, PAUSE, SERVE = "stop", "run", "step", "pause", "serve"
PLAY, MEMORIES = "play", "memories"
"""What a watcher may ask a run for (`RunControls.request`)."""
_SPEED = Real(minimum=0.0, open_minimum=True, optional=True)


def check_speed(speed: float | None) -> float | None:
    """None (full speed) or a number of env steps per second > 0."""
    try:
        return _SPEED.check("speed", speed)
    except ValueError:
        raise ValueError(f"speed must be None (full speed) or > 0 steps/s, got {speed!r}") from None


class RunControls:
    """Thread-safe requests for a run's driving loop.

    Args:
        paused: start paused (the trainer is built, then the loop waits).
        speed: env steps per second, or None for full speed.
    """

    def __init__(self, *, paused: bool = False, speed: float | None = None) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self.paused = paused
        self.speed = check_speed(speed)
        self.stopping = False
        self.stop_reason: str | None = None
        self._step_requests = 0
        self._requests: set[str] = set()

    def pause(self) -> None:
        with self._lock:
            self.paused = True
            self._wake.notify_all()  # a slow run waiting for its next tick pauses now

    def resume(self) -> None:
        with self._lock:
            self.paused = False
            self._step_requests = 0
            self._wake.notify_all()

    def step_once(self) -> None:
        """One more env step (and its update, if due), then stay paused."""
        with self._lock:
            self.paused = True
            self._step_requests += 1
            self._wake.notify_all()

    def set_speed(self, speed: float | None) -> None:
        speed = check_speed(speed)
        with self._lock:
            self.speed = speed
            self._wake.notify_all()

    def stop(self, reason: str | None = None) -> None:
        """End the run as 'stopped'; ``reason`` becomes its error text (the first one given)."""
        with self._lock:
            if not self.stopping:
                self.stopping = True
                self.stop_reason = reason
            self._wake.notify_all()

    def request(self, what: str) -> None:
        """Ask for `PLAY` (a greedy episode now) or `MEMORIES` (the memory explorer's view);
        the same request made twice before it is served is served once."""
        if what not in (PLAY, MEMORIES):
            raise ValueError(f"a run serves {PLAY!r} or {MEMORIES!r}, got {what!r}")
        with self._lock:
            self._requests.add(what)
            self._wake.notify_all()

    def take_requests(self) -> set[str]:
        """The requests made since the last call (and no more of them)."""
        with self._lock:
            taken, self._requests = self._requests, set()
            return taken

    def next_action(self, paused_recorded: bool) -> str:
        """What the loop does next: 'stop', 'serve' (a watcher's request), 'run', 'step', or
        'pause' (once, to record the pause: pass ``paused_recorded=True`` afterwards and it
        blocks until a request)."""
        with self._lock:
            while True:
                if self.stopping:
                    return STOP
                if self._requests:
                    return SERVE
                if not self.paused:
                    return RUN
                if self._step_requests:
                    self._step_requests -= 1
                    return STEP
                if not paused_recorded:
                    return PAUSE
                self._wake.wait(timeout=0.25)

    def throttle(self, next_tick: float) -> float:
        """Wait until ``next_tick`` (woken early by any request); returns the tick after it."""
        speed = self.speed
        now = time.monotonic()
        if speed is None:
            return now
        next_tick = max(next_tick + 1.0 / speed, now - 1.0)
        delay = next_tick - now
        if delay > 0:
            with self._lock:
                # A request made while the step ran woke nobody: it must not wait for the tick.
                if not (self.stopping or self.paused or self.speed != speed):
                    self._wake.wait(timeout=delay)
        return next_tick


def drive(
    run: RecordedRun,
    controls: RunControls,
    publish: Callable[[Telemetry], None],
    *,
    snapshot_interval: float = 0.5,
) -> None:
    """Open ``run``, step it as ``controls`` say, publish snapshots, and close it.

    Never raises for a failure of the run itself: it ends as 'failed' with the error (a trainer
    that cannot be built included).
    """
    trainer: Trainer | None = None
    watcher: EpisodeWatcher | None = None
    status, error = "stopped", None
    fresh_memories: list[Memories | SequenceMemories | None] = [None]

    def snapshot() -> Telemetry:
        """The trainer's snapshot, labelled with how the run stands (created, running, paused,
        or how it ended): the trainer only knows its own loop; with what its watchers see."""
        assert trainer is not None
        view, fresh_memories[0] = fresh_memories[0], None
        return dataclasses.replace(
            trainer.snapshot(),
            status=run.status,
            error=run.error,
            played=None if watcher is None else watcher.latest,
            greedy=None if watcher is None else watcher.curve.snapshot(),
            memories=view,
        )

    def serve(requests: set[str]) -> None:
        assert trainer is not None and watcher is not None
        if PLAY in requests:
            watcher.play_now()
        if MEMORIES in requests:
            fresh_memories[0] = memories(trainer)

    try:
        trainer = run.open(paused=controls.paused)
        watcher = EpisodeWatcher(trainer, earlier=run.greedy_so_far, on_played=run.record_played)
        watcher.maybe_play()  # the policy before any training: what a class sees first
        publish(snapshot())
        last_publish = next_tick = time.monotonic()
        while True:
            action = controls.next_action(run.status == "paused")
            if action == STOP:
                error = controls.stop_reason
                break
            if action == SERVE:
                serve(controls.take_requests())
                publish(snapshot())
                continue
            if action == PAUSE:
                run.mark("paused")
                publish(snapshot())
                run.save_resume_point()
                continue
            if action == RUN and run.status == "paused":
                run.mark("running")
                publish(snapshot())  # the server learns the run's status from its snapshots
            if trainer.done:
                status = "finished"
                break
            trainer.step()
            played = watcher.maybe_play() is not None
            now = time.monotonic()
            if action == STEP or played or now - last_publish >= snapshot_interval:
                publish(snapshot())
                run.record_progress()
                last_publish = now
            next_tick = controls.throttle(next_tick) if action == RUN else now
    except Exception as err:  # noqa: BLE001 - any failure must end as a recorded 'failed' run
        status, error = ending(err)
    finally:
        if trainer is not None and watcher is not None and status != "failed":
            # What an ended run is watched and explored by (nothing the run's record needs).
            with contextlib.suppress(Exception):
                serve({PLAY, MEMORIES})
        # A failure while closing is recorded by close() itself as the run's error.
        with contextlib.suppress(Exception):
            run.close(status, error)
        # The last snapshot shows how the run ended; failing to take it must not hide that.
        if trainer is not None:
            with contextlib.suppress(Exception):
                publish(snapshot())
