"""A run as the server sees it: a `RunHandle` relays between the pages and the run's worker.

The run trains in a worker (`rdqn.serve.executors`: a process by default, a thread in tests, a
Ray actor on a cluster). The handle sends the owner's controls to it and keeps the latest
`Telemetry` snapshot the worker sent, which pages read; a relay thread receives the worker's
events, makes the store writes a remote worker relays, notices a worker that dies (its run is
recorded as failed, with the reason and everything it wrote so far) and stops a run nobody has
looked at for ``idle_timeout`` seconds. `rdqn.serve.registry` caps, queues and reaps handles.

A run's status has one writer, `rdqn.runs.lifecycle.record_status`, called by the worker's
recorded run: it records every change in the store, then sends it (each snapshot carries the
status; the last event says how the run ended). `status` is the last status received, never
what was asked for; `expected_status` is what the run will be once its worker has acted on the
last request, which the registry counts its training slots by. Only where no worker can (one
that never started, died, or could not open the store) does the handle record the status
itself, through the same function, and never over a status the run recorded as final.

    created -> running <-> paused -> finished | failed | stopped

A stopped run resumes in a new handle with the same id (`RunHandle.resumed`, `rdqn.runs.resume`):
its worker checks the checkpoint and takes the run; until it has, the store keeps the run as it
was, whatever happens to the handle (a worker that cannot start, a stop, a checkpoint refused).
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from rdqn.config import RunConfig
from rdqn.runs.checkpoint_chunks import chunk_folder, read_chunks
from rdqn.runs.control import check_speed
from rdqn.runs.lifecycle import RecordedRun, ending, record_status
from rdqn.runs.resume import ResumePoint, resume_point
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.runs.store import RunStore
from rdqn.serve.executors import Executor, ThreadExecutor, Worker
from rdqn.serve.protocol import RunSpec, apply_record
from rdqn.training.memory_view import Memories, SequenceMemories
from rdqn.training.telemetry import Telemetry

__all__ = ["RunHandle"]

_POLL_S = 0.25
MEMORIES_MAX_AGE = 2.0
"""Seconds a memory explorer's view is fresh enough (`RunHandle.request_memories`)."""


class RunHandle:
    """One run, training in a worker.

    Args:
        config: the run's configuration.
        store: where to record the run (None: memory only). The run is filed at once, so its
            id exists (and can be listed as queued) before its worker starts.
        executor: where the run trains (default: a thread in this process).
        owner: an opaque session id; the registry stops a session's runs when it goes away.
            The store keeps a hash of it with the run (`rdqn.runs.store.owner_hash`).
        name, group_id: stored with the run (group_id ties the runs of one comparison).
        snapshot_interval: seconds between snapshots the worker sends.
        speed: env steps per second, or None for full speed.
        idle_timeout: stop the run after it trained this many seconds without a `snapshot()`
            poll (None: never); an owner that goes away may send no signal.
        on_exit: called (with this handle) when the run has ended.
        stop_at_exit: stop (and record) the run when the interpreter exits; a registry that
            owns the handle does that itself, for all its runs at once.
        resume: where a stopped run resumes (`rdqn.runs.resume.resume_point`, or simply
            `RunHandle.resumed`): it keeps its id and its worker continues from its resume
            checkpoint (a run that never started starts afresh).
    """

    def __init__(
        self,
        config: RunConfig,
        *,
        store: RunStore | None = None,
        executor: Executor | None = None,
        owner: str | None = None,
        name: str | None = None,
        group_id: str | None = None,
        snapshot_interval: float = 0.5,
        speed: float | None = None,
        idle_timeout: float | None = None,
        on_exit: Callable[[RunHandle], None] | None = None,
        stop_at_exit: bool = True,
        resume: ResumePoint | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.executor: Executor = executor if executor is not None else ThreadExecutor()
        self.owner = owner
        self.group_id = group_id
        self.snapshot_interval = snapshot_interval
        self.idle_timeout = idle_timeout
        self.resumed_run = resume is not None
        """Whether this handle resumes a stopped run rather than filing a new one."""
        if resume is None:
            run_id = RecordedRun(config, store, name=name, group_id=group_id).create()
        else:
            run_id = resume.run_id
        if store is not None and owner is not None:
            store.set_owner_hash(run_id, owner)  # whose it is, after a server restart too
        self.id: str = run_id
        self._resume = resume
        self._refused = False  # a relayed resume whose taking the store refused
        self._speed = check_speed(speed)
        self._on_exit = on_exit
        self._stop_at_exit = stop_at_exit
        self._lock = threading.Lock()
        self._status = "created"
        self._asked: str | None = None  # the status the last pause/resume/step request leads to
        self._error: str | None = None
        self._snapshot: Telemetry | None = None
        self._memories: Memories | SequenceMemories | None = None
        self._memories_asked = float("-inf")
        self._memories_arrived = threading.Event()
        self._first_report = threading.Event()  # set by the first snapshot, or by the run's end
        self._worker: Worker | None = None
        self._relay: threading.Thread | None = None
        self._stop_sent = False
        self.last_polled = time.monotonic()
        self.created = time.time()

    @classmethod
    def resumed(cls, run_id: str, *, store: RunStore, **kwargs: Any) -> RunHandle:
        """A handle that resumes the stopped run ``run_id`` of ``store`` once started (same id;
        `rdqn.runs.resume`). Raises `rdqn.runs.resume.ResumeError` naming the run and why when
        it cannot be resumed (as far as `resume_point` tells; its worker checks the rest).
        ``kwargs`` are the constructor's (owner, speed, idle_timeout...)."""
        point = resume_point(store, run_id)
        return cls(point.config, store=store, resume=point, **kwargs)

    # ------------------------------------------------------------------ controls
    def start(self, *, paused: bool = False) -> RunHandle:
        """Start the run's worker (once). With `paused=True` it builds the trainer and waits."""
        with self._lock:
            if self._worker is not None:
                raise RuntimeError(f"run {self.id} was already started")
            if self._status != "created":
                raise RuntimeError(f"run {self.id} is {self._status}; it cannot start")
            store_path = None
            if self.store is not None and self.executor.shares_store:
                store_path = str(self.store.path.resolve())
            try:
                spec = RunSpec(
                    run_id=self.id,
                    config=self.config,
                    store_path=store_path,
                    paused=paused,
                    speed=self._speed,
                    snapshot_interval=self.snapshot_interval,
                    resume=self._resume_point(shared=store_path is not None),
                )
                self._worker = self.executor.launch(spec)
            except BaseException as err:
                self._fail_to_start(err)
                raise
            self._asked = "paused" if paused else "running"
            self.last_polled = time.monotonic()
            relay = threading.Thread(target=self._relay_events, name=f"rdqn-relay-{self.id}")
            relay.daemon = True
            if self._stop_at_exit:  # stopped and recorded before the interpreter goes
                atexit.register(self.stop)
            # Published once started: `join` reads it without the lock, from other threads.
            relay.start()
            self._relay = relay
        return self

    def _resume_point(self, *, shared: bool) -> ResumePoint | None:
        """The resume point for the worker: the checkpoint's path where the worker shares this
        machine's files, else with the file's bytes."""
        point = self._resume
        if point is None or point.checkpoint is None:
            return point
        if shared:
            return replace(point, checkpoint=point.checkpoint.resolve())
        return replace(
            point,
            data=point.checkpoint.read_bytes(),
            chunks=read_chunks(chunk_folder(point.checkpoint)),
        )

    def _fail_to_start(self, error: BaseException) -> None:
        """A worker that could not be launched: the run is recorded as failed, not left hanging
        (called under the lock). A resumed run stays as it was: stopped, and resumable."""
        self._status, self._error = ending(error)
        if self.resumed_run:
            self._status, self._error = "stopped", f"not resumed: {self._error}"
        else:
            with contextlib.suppress(Exception):
                RecordedRun(self.config, self.store, run_id=self.id).close(*ending(error))
        if self._on_exit is not None:
            threading.Thread(target=self._on_exit, args=(self,), daemon=True).start()

    def _send(self, *command: Any) -> None:
        if self._worker is not None:
            self._worker.send(command)

    def _expected(self) -> str:
        return self._status if self._asked is None else self._asked

    def pause(self) -> None:
        with self._lock:
            if self._expected() == "running":
                self._send("pause")
                self._asked = "paused"

    def resume(self) -> None:
        with self._lock:
            if self._expected() == "paused":
                self._send("resume")
                self._asked = "running"

    def step_once(self) -> None:
        """Advance exactly one env step (and its update, if one is due), then stay paused."""
        with self._lock:
            if self._expected() in ("running", "paused"):
                self._send("step")
                self._asked = "paused"

    def play_episode(self) -> None:
        """Ask the run for a greedy episode of its current policy now ("Play an episode now")."""
        with self._lock:
            if self._expected() in ("running", "paused"):
                self._send("play")

    def request_memories(self, max_age: float = MEMORIES_MAX_AGE) -> None:
        """Ask the run for its memory explorer's view, unless one is under way or was received
        less than ``max_age`` seconds ago: however many pages poll, the run builds one at a
        time."""
        now = time.monotonic()
        with self._lock:
            if self._expected() not in ("running", "paused"):
                return
            if now - self._memories_asked < max_age:
                return
            self._memories_asked = now
            self._send("memories")

    @property
    def memories(self) -> Memories | SequenceMemories | None:
        """The latest memory explorer's view the run sent (None before the first)."""
        with self._lock:
            return self._memories

    def first_memories(self, timeout: float) -> Memories | SequenceMemories | None:
        """`memories`, asking for them and waiting up to ``timeout`` seconds for the first view
        if none has come yet (a page's first draw, rather than a notice that it is coming)."""
        if self.memories is None:
            self.request_memories()
            self._memories_arrived.wait(timeout)
        return self.memories

    def set_speed(self, speed: float | None) -> None:
        speed = check_speed(speed)
        with self._lock:
            self._speed = speed
            self._send("speed", speed)

    def stop(
        self, timeout: float | None = 10.0, *, reason: str | None = None, wait: bool = True
    ) -> None:
        """End the run (recorded as 'stopped', with ``reason`` if given) and, with ``wait``, wait
        for it: a worker that has not ended its run ``timeout`` seconds after the request is
        killed."""
        with self._lock:
            never_started = self._worker is None and self._status == "created"
            if never_started:
                self._status, self._error = "stopped", reason
            else:
                self._request_stop(reason)
            relay = self._relay
        if never_started:
            if not self.resumed_run:  # a resume never taken leaves the run as it was
                RecordedRun(self.config, self.store, run_id=self.id).close("stopped", reason)
            return
        if wait and relay is not None and relay is not threading.current_thread():
            relay.join(timeout)
            if relay.is_alive() and self._worker is not None:
                self._worker.kill()
                relay.join(timeout)

    def _request_stop(self, reason: str | None) -> None:
        if not self._stop_sent:
            self._stop_sent = True
            self._send("stop", reason)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the run to end; True when it has."""
        relay = self._relay
        if relay is None:
            return self._status in FINAL_STATUSES
        relay.join(timeout)
        return not relay.is_alive()

    # ------------------------------------------------------------------- reading
    @property
    def status(self) -> str:
        """The run's status as its worker last reported it (created until it has started)."""
        return self._status

    @property
    def started(self) -> bool:
        """Whether its worker was launched (a queued run's was not, yet)."""
        return self._worker is not None

    @property
    def expected_status(self) -> str:
        """The status the run will have once its worker acts on the last pause / resume / step
        request (`status` until one is pending): what the registry's slots count."""
        with self._lock:
            return self._expected()

    @property
    def stopping(self) -> bool:
        """Whether the run was asked to stop and has not ended yet (it saves its checkpoint)."""
        return self._stop_sent and self._status not in FINAL_STATUSES

    @property
    def error(self) -> str | None:
        return self._error

    @property
    def speed(self) -> float | None:
        return self._speed

    def snapshot(self, *, touch: bool = True) -> Telemetry | None:
        """The latest snapshot (None before the trainer has started); ``touch``: someone is
        watching, which keeps the run from stopping for idleness."""
        if touch:
            self.last_polled = time.monotonic()
        with self._lock:
            return self._snapshot

    def wait_for_snapshot(self, timeout: float) -> Telemetry | None:
        """`snapshot`, waiting up to ``timeout`` seconds for the first one if the run's worker
        has started and sent none yet (it ends the wait early if the run ends first); returns at
        once for a run that has not started (queued) or has sent one."""
        with self._lock:
            started = self._worker is not None
        if started:
            self._first_report.wait(timeout)
        return self.snapshot()

    # --------------------------------------------------------------------- relay
    def _relay_events(self) -> None:
        worker = self._worker
        assert worker is not None
        ended: tuple[str, str | None] | None = None
        try:
            while ended is None:
                for event in worker.events(_POLL_S):
                    ended = self._on_event(event) or ended
                if ended is None and not worker.alive():
                    for event in worker.events(0.0):  # what it sent before it ended
                        ended = self._on_event(event) or ended
                    if ended is None:
                        ended = self._lost(worker.exit_reason())
                if ended is None:
                    self._stop_if_idle()
        except Exception as err:  # noqa: BLE001 - the run must end recorded, whatever failed here
            worker.kill()
            ended = self._lost(f"the server could not record the run: {type(err).__name__}: {err}")
        finally:
            status, error = ended if ended is not None else ("failed", "the run's relay ended")
            with self._lock:
                self._status, self._error, self._asked = status, error, None
            self._first_report.set()
            with contextlib.suppress(Exception):
                worker.join(10.0)
            atexit.unregister(self.stop)
            if self._on_exit is not None:
                self._on_exit(self)

    def _never_taken(self) -> bool:
        """A resume whose worker has not taken the run (it sent no snapshot): the store keeps
        the run as it was, whatever ends the handle."""
        return self.resumed_run and self._status == "created"

    def _lost(self, reason: str) -> tuple[str, str]:
        """Record how a run ended whose worker could not close it (its rows stay): 'stopped' if
        a stop was asked for (the worker was killed for not ending in time), else 'failed'."""
        ending = ("stopped", f"stopped; {reason}") if self._stop_sent else ("failed", reason)
        if self._never_taken():
            return "stopped", f"not resumed: {ending[1]}"
        if self.store is not None:
            with contextlib.suppress(Exception):
                record_status(self.store, self.id, *ending)
        return ending

    def _ended(self, status: str, error: str | None) -> tuple[str, str | None]:
        """The worker's last word: how its run ended, recorded here if the worker could not (it
        could not open the store)."""
        if self._never_taken():
            return (status, error) if status == "stopped" else ("stopped", f"not resumed: {error}")
        if self.store is not None:
            recorded = self.store.get_run(self.id).status
            if recorded not in FINAL_STATUSES:
                record_status(self.store, self.id, status, error, expect={"status": recorded})
        return status, error

    def _on_event(self, event: tuple[Any, ...]) -> tuple[str, str | None] | None:
        if self._refused:  # what the worker sent after its resume was refused: not the run's
            return None
        kind = event[0]
        if kind == "snapshot":
            with self._lock:
                self._snapshot = event[1]
                if event[1].memories is not None:  # sent once: kept until the next one
                    self._memories = event[1].memories
                    self._memories_asked = time.monotonic()  # fresh from now
                    self._memories_arrived.set()
                if event[1].status in ("running", "paused"):
                    self._reported(event[1].status)
            self._first_report.set()
        elif kind == "record":
            if self.store is not None and apply_record(self.store, *event[1:]) is False:
                return self._not_taken()
        elif kind == "done":
            return self._ended(event[1], event[2])
        return None

    def _not_taken(self) -> tuple[str, str]:
        """A relayed resume whose taking the store refused (the run changed since the server
        read it): the run stays as the store has it, and its worker goes."""
        self._refused = True
        if self._worker is not None:
            self._worker.kill()
        record = self.store.get_run(self.id)  # type: ignore[union-attr]
        why = "its record changed while its checkpoint was checked; try again"
        if record.status != "stopped":
            why = f"it is {record.status}, not stopped"
        return "stopped", f"cannot resume run {self.id}: {why}"

    def _reported(self, status: str) -> None:
        """The worker reports ``status`` (under the lock): a request it has acted on is done."""
        self._status = status
        if self._asked == status:
            self._asked = None

    def _stop_if_idle(self) -> None:
        # A paused run costs no CPU, and the registry bounds how many are held (max_paused);
        # those of an owner that went away are stopped by whoever paused them.
        if self.idle_timeout is None or self._status != "running":
            return
        if time.monotonic() - self.last_polled > self.idle_timeout:
            with self._lock:
                self._request_stop(f"stopped: nobody watched this run for {self.idle_timeout:g} s")

    def __repr__(self) -> str:
        return f"RunHandle(id={self.id!r}, status={self._status!r}, env={self.config.env.id!r})"
