"""One lifecycle for every recorded run, whoever drives it.

    created --open()--> running <--> paused --close()--> finished | failed | stopped
                          ^                                                  |
                          +--------- open() of a resume (rdqn.runs.resume) --+

A `RecordedRun` owns everything a run leaves behind: its row in the run store (filed with its
config, then every status change), the batched metric writer its trainer streams episodes and
updates into, the progress counters, and, however the run ends, the final counters, the manifest,
a checkpoint and the final status with its reason. A stopped run's checkpoint (and a paused
run's, see `save_resume_point`) carries what resuming it needs; given a resume point
(``resume``), the run continues from it under the same id. The CLI, comparisons and the
dashboard's background runs all record runs through it; a client only chooses how to drive the
trainer (`run_to_end`, or `rdqn.runs.control.drive` with pause / resume / step) and how to show
progress.

A run's status has one writer, `rdqn.runs.status.record_status`, and it is called from a few places
only (a test scans for any other): the recorded run itself, in the process that trains it
(`RecordedRun`: running and paused, a resume taking the run, its end with its reason); and, for a
run whose process cannot, the server's `rdqn.serve.handle.RunHandle` (a worker lost, never started,
or unable to open the store) and the store (`rdqn.runs.store.RunStore`: the runs of a process that
died, `rdqn.runs.orphans`, and a final status a full disk kept out of the file until there is space,
`rdqn.runs.unwritten`). Every other place reads the status.

How a run ends (`ending`):

    finished   the budget was reached
    failed     any exception while building or stepping the trainer (a diverging update
               included); the error says which
    stopped    a stop request, Ctrl-C or nobody watching; the error says why

Ctrl-C: a KeyboardInterrupt can land anywhere, inside a compiled (numba) call too, where it
surfaces as a ``SystemError`` ("... returned a result with an exception set") with the interrupt
as its cause, and the trainer may be cut off inside a step. `ending` files both as 'stopped'; a
client that owns the process asks instead (a signal handler setting a flag, `rdqn.cli`) and
passes ``stop`` to `run_to_end`, which reads it between two steps: the run ends 'stopped', with
a checkpoint that resumes it.

A run whose process died before it could close (killed, crashed) stays 'running' or 'paused' in
the store until the store sees that process is gone (`RunStore.mark_interrupted`, which reading
the runs also does every few seconds) and marks it 'stopped' with the reason.

Periodic checkpoints: while it trains, a recorded run writes its rows and a resume checkpoint
every `checkpoint_period` seconds, so a run whose process dies loses at most that stretch
(`rdqn.runs.periodic` says how often, and what it costs).
"""

from __future__ import annotations

import contextlib
import math
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from rdqn.learn.errors import DivergenceError
from rdqn.runs.checkpoints import checkpoint_parts
from rdqn.runs.periodic import (
    CHECKPOINT_EVERY_S,
    MAX_CHECKPOINT_SHARE,
    checkpoint_period,
    next_checkpoint_gap,
)
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.runs.status import RunRecords, record_status
from rdqn.runs.store_access import StoreError
from rdqn.runs.writer import RunWriter

if TYPE_CHECKING:  # the trainer (and torch) load only where a run trains, not in a web server
    from rdqn.config import RunConfig
    from rdqn.runs.resume import ResumePoint
    from rdqn.training.episodes import GreedyReturns, PlayedEpisode
    from rdqn.training.trainer import Trainer

__all__ = [
    "CHECKPOINT_EVERY_S",
    "FINAL_STATUSES",
    "MAX_CHECKPOINT_SHARE",
    "RecordedRun",
    "RunRecords",
    "checkpoint_period",
    "ending",
    "next_checkpoint_gap",
    "record_status",
    "run_to_end",
]

INTERRUPTED_BY_USER = "interrupted by the user"


def ending(error: BaseException) -> tuple[str, str]:
    """The final (status, reason) of a run that ended with this exception.

    Errors that already say what happened and what to do (a divergence, a store fault such as
    a full disk) are kept as they are; an out-of-memory error says so in words; any other is
    prefixed with its type.
    """
    if _interrupted(error):
        return "stopped", INTERRUPTED_BY_USER
    if isinstance(error, DivergenceError | StoreError):
        return "failed", str(error)
    if isinstance(error, MemoryError):
        detail = f": {error}" if str(error) else ""
        return "failed", (
            f"out of memory{detail}; lower replay.capacity, replay.window or replay.batch_size, "
            "or run fewer runs at once"
        )
    return "failed", f"{type(error).__name__}: {error}"


def _interrupted(error: BaseException) -> bool:
    """A KeyboardInterrupt, or an error it caused (a compiled call it cut short raises
    ``SystemError`` from it)."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


class RecordedRun:
    """One run and its record in a `RunStore` (or in memory only when ``store`` is None).

    Args:
        config: the run's configuration.
        store: where the run is recorded: a `RunStore`, or a relay of its writes to the server's
            store (a worker on another machine); None keeps the run in memory only.
        name, group_id: filed with the run (a comparison's runs share a group id).
        run_id: the id of a run already filed (by the server that queued it).
        resume: where a stopped run resumes (`rdqn.runs.resume.resume_point`): `open` checks
            its checkpoint whole, restores it and only then takes the run (its id is the
            point's).
        checkpoint_every: seconds between periodic resume checkpoints (``math.inf``: none);
            None: `checkpoint_period` (``$RDQN_CHECKPOINT_EVERY``, else `CHECKPOINT_EVERY_S`).
    """

    def __init__(
        self,
        config: RunConfig,
        store: RunRecords | None = None,
        *,
        name: str | None = None,
        group_id: str | None = None,
        run_id: str | None = None,
        resume: ResumePoint | None = None,
        checkpoint_every: float | None = None,
    ) -> None:
        if resume is not None:
            if store is None:
                raise ValueError("a run kept in memory only cannot resume")
            run_id = resume.run_id
        if checkpoint_every is None:
            checkpoint_every = checkpoint_period() or math.inf
        if not checkpoint_every > 0:
            raise ValueError(f"checkpoint_every must be > 0 s, got {checkpoint_every!r}")
        self.checkpoint_every = float(checkpoint_every)
        self.config = config
        self.store = store
        self.name = name
        self.group_id = group_id
        self.id: str | None = run_id
        self.resume = resume
        self.trainer: Trainer | None = None
        self.status = "created"
        self.error: str | None = None
        self._taken = resume is None  # a resumed run's record is its own once `open` took it
        self._writer: RunWriter | None = None
        self._saved_at: int | None = None  # env steps of the last resume checkpoint saved
        self._chunks_saved: frozenset[str] = frozenset()  # the chunks its checkpoint references
        self._checkpoint_due = math.inf  # monotonic time of the next periodic checkpoint
        self._save_cost = 0.0  # seconds the last periodic checkpoint took (none yet: 0)

    def create(self) -> str:
        """File the run (status 'created') if it is not filed yet; returns its id."""
        if self.id is None:
            create_run = getattr(self.store, "create_run", None)  # a `RunStore`'s
            if create_run is not None:
                self.id = create_run(
                    **self.config.record_fields(), name=self.name, group_id=self.group_id
                )
            elif self.store is None:
                self.id = uuid.uuid4().hex[:12]
            else:
                raise ValueError("a run relayed to another store must be filed there first")
        return self.id

    def open(self, *, paused: bool = False) -> Trainer:
        """Build the trainer, attach the metric writer and mark the run running (or paused).

        A run that is not filed yet is filed only once its trainer is built, so settings the
        trainer rejects leave nothing behind; a filed run whose trainer fails to build is
        recorded as failed. Either way the exception propagates.

        A resumed run (``resume``) is taken only once its checkpoint is checked whole and
        restored (`_resume`). Until then the store keeps it as it was, stopped and resumable: a
        checkpoint refused raises `rdqn.runs.resume.ResumeError` (one line naming the run and
        the file, which this run then ends 'stopped' with, in memory), and any other failure
        propagates as it is, this run ending 'stopped' as "not resumed: <why>".
        """
        if self.status != "created":
            raise RuntimeError(f"run {self.id} is {self.status}; only a created run opens")
        from rdqn.runs.resume import ResumeError
        from rdqn.training.trainer import Trainer

        status = "paused" if paused else "running"
        try:
            trainer = Trainer(self.config) if self.resume is None else self._resume(status)
        except BaseException as err:
            if not self._taken:
                said = str(err) if isinstance(err, ResumeError) else None
                self.close("stopped", said or f"not resumed: {ending(err)[1]}")
            elif self.id is not None:
                self.close(*ending(err))
            raise
        try:
            self.create()
            self.trainer = trainer
            if self.store is not None:
                self._writer = RunWriter(
                    self.store,
                    self.id,  # type: ignore[arg-type]
                    progress=partial(_counters, trainer),
                )
                trainer.sink = self._writer
            if self.resume is None:
                self.mark(status)
            else:
                self.status = status
            self._checkpoint_due = time.monotonic() + self.checkpoint_every
        except BaseException as err:
            if self.id is None:
                trainer.close()
            else:
                self.close(*ending(err))
            raise
        return trainer

    def _resume(self, status: str) -> Trainer:
        """A trainer restored from the resume point's checkpoint, checked whole first
        (`rdqn.runs.resume.restore`), then the run taken: 'stopped' -> ``status`` with the rows
        past the checkpoint dropped, in one write, only if the store still records the run as
        the checkpoint was checked against. A store that records something else by then (a
        newer checkpoint, from a worker still closing) is read again, up to three times; a run
        no longer stopped (resumed elsewhere) is refused."""
        from rdqn.runs.resume import ResumeError, restore, resume_point
        from rdqn.training.trainer import Trainer

        assert self.resume is not None and self.store is not None and self.id is not None
        point = self.resume
        readable = callable(getattr(self.store, "get_run", None))  # not a relay
        for _ in range(3):
            if readable:
                point = resume_point(self.store, self.id)  # type: ignore[arg-type]
            trainer = Trainer(self.config)
            try:
                counters = restore(point, trainer)
                taken = record_status(
                    self.store, self.id, status, expect=point.recorded.expect(), rewind=counters
                )
            except BaseException:
                trainer.close()
                raise
            if taken is not False:
                if point.evaluations is not None:  # the curve goes on where the policy does
                    trainer.evaluations = point.evaluations.until(trainer.env_steps)
                self._taken = True
                self._saved_at = trainer.env_steps if point.checkpoint is not None else None
                return trainer
            trainer.close()
            if not readable:
                break
        raise ResumeError(f"cannot resume run {self.id}: its record kept changing; try again")

    def mark(self, status: str) -> None:
        """Record a move between 'running' and 'paused'."""
        if status not in ("running", "paused"):
            raise ValueError(f"status must be 'running' or 'paused', got {status!r}")
        if self.store is not None and self.id is not None:
            record_status(self.store, self.id, status)
        self.status = status

    @property
    def greedy_so_far(self) -> GreedyReturns | None:
        """The greedy returns a resumed run had played up to where it resumed (its watcher
        goes on from them, as its store keeps them: `open` dropped any played later); None
        for a fresh run, or before it opened."""
        greedy = None if self.resume is None else self.resume.greedy
        if greedy is None or self.trainer is None:
            return None
        return greedy.until(self.trainer.env_steps)

    def record_played(self, played: int, episode: PlayedEpisode) -> None:
        """Record the run's ``played``-th greedy episode (`rdqn.training.watcher`), written at
        once: a run can be watched and its greedy curve drawn from the store."""
        if self._writer is not None:
            self._writer.add_played(played, episode)

    def record_progress(self) -> None:
        """Save a periodic resume checkpoint when one is due (see the module docstring); the
        trainer's counters reach the store with every batch of rows (`RunWriter`). Call it
        between two steps; a failing save (a full disk) raises, and the run should end."""
        trainer = self.trainer
        if trainer is not None and not trainer.done and time.monotonic() >= self._checkpoint_due:
            started = time.monotonic()
            self.save_resume_point()
            done = time.monotonic()
            # The cheaper of the last two saves spaces the next: a save slowed once (the first,
            # which also loads what saving needs; a moment of load) must not push the next one
            # minutes away, where a process that dies would lose them.
            cost, self._save_cost = min(done - started, self._save_cost), done - started
            self._checkpoint_due = done + next_checkpoint_gap(self.checkpoint_every, cost)

    def save_resume_point(self) -> bool:
        """Write the rows so far and a resume checkpoint now, so that the run can be resumed from
        here if its process dies (called when a run pauses, and periodically by
        `record_progress`). Skipped, returning False, without a store, or when the trainer has not
        stepped since the last one."""
        trainer = self.trainer
        if self.store is None or self.id is None or trainer is None:
            return False
        if trainer.env_steps == self._saved_at or not trainer.between_steps:
            return False
        if self._writer is not None:
            self._writer.flush()
        self._save_checkpoint(trainer, resumable=True)
        return True

    def _save_checkpoint(self, trainer: Trainer, *, resumable: bool) -> None:
        assert self.store is not None and self.id is not None
        data, chunks = checkpoint_parts(trainer.checkpoint_state(resumable=resumable))
        saved = self._chunks_saved  # the store holds them: only the new ones travel
        self.store.save_checkpoint(
            self.id,
            data,
            chunks={d: None if d in saved else chunk for d, chunk in chunks.items()},
            resume_env_steps=trainer.env_steps if resumable else None,
        )
        self._chunks_saved = frozenset(chunks)
        if resumable:
            self._saved_at = trainer.env_steps

    def close(self, status: str, error: str | None = None) -> None:
        """End the run: final counters, rows, manifest and checkpoint, then the final status
        (a resumed run not taken yet, `open`, keeps its record as it was: in memory only).

        A 'stopped' run's checkpoint can resume it (unless the trainer was cut off inside a
        step). Closing an already closed run does nothing. The status is recorded even when
        saving the manifest or checkpoint fails (that failure then becomes the run's error and
        propagates).
        """
        if status not in FINAL_STATUSES:
            raise ValueError(f"status must be one of {FINAL_STATUSES}, got {status!r}")
        if self.status in FINAL_STATUSES:
            return
        trainer = self.trainer
        self._checkpoint_due = math.inf
        try:
            if self._writer is not None:
                self._writer.close()
            if self.store is not None and trainer is not None and self.id is not None:
                from rdqn.runs.manifest import manifest_of

                self.store.set_manifest(self.id, manifest_of(trainer))
                resumable = status == "stopped" and trainer.between_steps
                self._save_checkpoint(trainer, resumable=resumable)
        except BaseException as err:
            status, error = ending(err)
            raise
        finally:
            self.status, self.error = status, error
            if self.store is not None and self.id is not None and self._taken:
                with contextlib.suppress(Exception):
                    record_status(self.store, self.id, status, error)
            if trainer is not None:
                with contextlib.suppress(Exception):  # the run's own error matters more
                    trainer.close()

    def __repr__(self) -> str:
        return f"RecordedRun(id={self.id!r}, status={self.status!r}, env={self.config.env.id!r})"


def run_to_end(
    run: RecordedRun,
    *,
    progress: Callable[[Trainer], None] | None = None,
    stop: Callable[[], str | None] | None = None,
) -> RecordedRun:
    """Open the run (unless it is open already) and train it to its budget, recording progress
    about every 100 steps.

    The run ends 'finished' only once its trainer is done: its budget spent, or its goal
    (``train.stop_at_return``) reached. ``stop`` is asked before every step:
    a reason (not None) ends the run there as 'stopped' with that reason, its resume checkpoint
    saved. An exception while training or while saving its end (a full disk, say) ends it as
    'failed' with the error (returned, not raised), and so does a loop that returns short of the
    budget; a KeyboardInterrupt (or an error it caused) ends it as 'stopped' and propagates. A
    trainer that cannot be built raises.
    """
    trainer = run.trainer if run.trainer is not None else run.open()
    total = run.config.train.total_steps
    stopped: str | None = None

    def report(current: Trainer) -> None:
        run.record_progress()
        if progress is not None:
            progress(current)

    def asked() -> bool:
        nonlocal stopped
        stopped = stop() if stop is not None else None
        return stopped is not None

    try:
        if stop is None:
            trainer.run(progress=report)
        else:
            trainer.run(progress=report, stop=asked)
    except BaseException as err:  # noqa: BLE001 - any failure ends the run as a recorded 'failed'
        status, error = ending(err)
        if _interrupted(err) or not isinstance(err, Exception):
            run.close(status, error)
            if isinstance(err, KeyboardInterrupt) or not _interrupted(err):
                raise
            raise KeyboardInterrupt from err  # what cut a compiled call short, as it was
    else:
        status, error = "finished", None
        if stopped is not None:
            status, error = "stopped", stopped
        elif not trainer.done:
            status = "failed"
            error = (
                f"training ended after {trainer.env_steps} of {total} env steps without an error"
            )
    # close() records the status even when saving fails, and that failure becomes the error.
    with contextlib.suppress(Exception):
        run.close(status, error)
    return run


def _counters(trainer: Trainer) -> dict[str, int]:
    """The run's progress counters, as the trainer has them now."""
    return {
        "env_steps": trainer.env_steps,
        "updates": trainer.updates,
        "episodes": trainer.episodes,
    }
