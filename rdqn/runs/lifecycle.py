"""One lifecycle for every recorded run, whoever drives it.

    created --open()--> running <--> paused --close()--> finished | failed | stopped
       ^                                                                    |
       +------------------------ resume (rdqn.runs.resume) -----------------+

A `RecordedRun` owns everything a run leaves behind: its row in the run store (filed with its
config, then every status change), the batched metric writer its trainer streams episodes and
updates into, the progress counters, and, however the run ends, the final counters, the manifest,
a checkpoint and the final status with its reason. A stopped run's checkpoint (and a paused
run's, see `save_resume_point`) carries what resuming it needs; given one (``resume_from``), the
run continues from it under the same id. The CLI, comparisons and the dashboard's
background runs all record runs through it; a client only chooses how to drive the trainer
(`run_to_end`, or `rdqn.runs.control.drive` with pause / resume / step) and how to show progress.

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
the store until the store sees its owner is gone (`RunStore.mark_interrupted`, which reading the
runs also does every few seconds) and marks it 'stopped' with the reason.

Periodic checkpoints: while it trains, a recorded run writes its rows and a resume checkpoint
every `checkpoint_period` seconds (``$RDQN_CHECKPOINT_EVERY``, default 60 s), so a run whose
process dies loses at most that stretch and resumes from there (`rdqn.runs.resume`; a checkpoint
taken inside an episode resumes at the next episode, like a pause). A save costs one copy of the
replay memory: measured 10-25 ms for per-notebook, paper and chain-lesson (1.2-1.5 MB) and 30-105
ms for e14, e14-lesson and e15 (7.6-8.4 MB) on a loaded two-core machine: under 0.2 % of a
minute. Whatever a save costs, the next one waits at least that cost / `MAX_CHECKPOINT_SHARE`,
so saving never takes more than 2 % of a run's time (a short period on a slow disk included).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
import uuid
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from rdqn.config import RunConfig
from rdqn.learn.errors import DivergenceError
from rdqn.runs.checkpoints import (
    CheckpointError,
    checkpoint_bytes,
    load_checkpoint,
    load_checkpoint_bytes,
)
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.runs.store import KEPT, ResumeError, RunRecords, RunStore, StoreError
from rdqn.runs.writer import RunWriter

if TYPE_CHECKING:  # the trainer (and torch) load only where a run trains, not in a web server
    from rdqn.training.trainer import Trainer

__all__ = [
    "CHECKPOINT_EVERY_S",
    "FINAL_STATUSES",
    "MAX_CHECKPOINT_SHARE",
    "RecordedRun",
    "checkpoint_period",
    "ending",
    "next_checkpoint_gap",
    "run_to_end",
]

INTERRUPTED_BY_USER = "interrupted by the user"
CHECKPOINT_EVERY_S = 60.0
"""Seconds between two periodic resume checkpoints of a training run (the default)."""
MAX_CHECKPOINT_SHARE = 0.02
"""The most of a run's time periodic checkpoints may take."""


def checkpoint_period(environ: Mapping[str, str] | None = None) -> float | None:
    """Seconds between periodic checkpoints: ``$RDQN_CHECKPOINT_EVERY`` (``0`` or ``off``: none),
    default `CHECKPOINT_EVERY_S`. Anything but a number >= 0 raises ``ValueError``."""
    raw = (os.environ if environ is None else environ).get("RDQN_CHECKPOINT_EVERY", "").strip()
    if not raw:
        return CHECKPOINT_EVERY_S
    if raw.lower() == "off":
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(
            f"RDQN_CHECKPOINT_EVERY must be a number of seconds >= 0 (0 or 'off': no periodic "
            f"checkpoints), got {raw!r}"
        )
    return seconds or None


def next_checkpoint_gap(period: float, cost: float) -> float:
    """Seconds from the end of one periodic save to the next: the period, or longer when a save
    costs more than `MAX_CHECKPOINT_SHARE` of it."""
    return max(period, cost / MAX_CHECKPOINT_SHARE)


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
        resume_from: the resume checkpoint of the filed run ``run_id`` (a file, or its bytes):
            `open` restores it into the trainer (`rdqn.runs.resume`).
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
        resume_from: str | os.PathLike[str] | bytes | None = None,
        checkpoint_every: float | None = None,
    ) -> None:
        if resume_from is not None and run_id is None:
            raise ValueError("resume_from needs the run_id of the run it resumes")
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
        self.resume_from = resume_from
        self.trainer: Trainer | None = None
        self.status = "created"
        self.error: str | None = None
        self._writer: RunWriter | None = None
        self._saved_at: int | None = None  # env steps of the last resume checkpoint saved
        self._checkpoint_due = math.inf  # monotonic time of the next periodic checkpoint

    def create(self) -> str:
        """File the run (status 'created') if it is not filed yet; returns its id."""
        if self.id is None:
            if isinstance(self.store, RunStore):
                self.id = self.store.create_run(
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
        recorded as failed. Either way the exception propagates. A checkpoint ``resume_from``
        that cannot be read or restored (damaged, edited, of another rdqn: any error; the trainer
        checks the whole state before it uses any of it, `Trainer.restore`) raises `ResumeError`
        naming the run and the file, and the run stays 'stopped' with that error.
        """
        if self.status != "created":
            raise RuntimeError(f"run {self.id} is {self.status}; only a created run opens")
        from rdqn.training.trainer import Trainer

        try:
            trainer = Trainer(self.config)
            if self.resume_from is not None:
                try:
                    trainer.restore(self._resume_state())
                except Exception as err:  # noqa: BLE001 - whatever damaged bytes raise
                    trainer.close()
                    raise self._not_resumed(err) from err
                except BaseException:
                    trainer.close()
                    raise
                self._saved_at = trainer.env_steps
        except ResumeError as err:
            self.close("stopped", str(err))
            raise
        except BaseException as err:
            if self.id is not None:
                self.close(*ending(err))
            raise
        try:
            self.create()
            self.trainer = trainer
            if self.store is not None:
                self._writer = RunWriter(
                    self.store,  # type: ignore[arg-type]
                    self.id,  # type: ignore[arg-type]
                    progress=partial(_counters, trainer),
                )
                trainer.sink = self._writer
            self.mark("paused" if paused else "running")
            self._checkpoint_due = time.monotonic() + self.checkpoint_every
        except BaseException as err:
            if self.id is None:
                trainer.close()
            else:
                self.close(*ending(err))
            raise
        return trainer

    def _not_resumed(self, error: Exception) -> ResumeError:
        if isinstance(error, CheckpointError):  # it names the file
            return ResumeError(f"cannot resume run {self.id}: {error}; {KEPT}")
        from rdqn.replay.state_checks import ReplayStateError
        from rdqn.training.state import ResumeStateError

        source = self.resume_from
        where = "bytes" if isinstance(source, bytes) else f"file {source}"
        detail = str(error)
        if not isinstance(error, ResumeStateError | ReplayStateError):  # says what it checked
            detail = f"{type(error).__name__}: {detail}"
        detail = " ".join(detail.split())  # torch's span lines
        return ResumeError(
            f"cannot resume run {self.id}: its checkpoint ({where}) cannot be restored: {detail}; "
            f"{KEPT}"
        )

    def _resume_state(self) -> dict[str, Any]:
        source = self.resume_from
        if isinstance(source, bytes):
            return load_checkpoint_bytes(source, source=f"the resume checkpoint of run {self.id}")
        assert source is not None
        return load_checkpoint(source)

    def mark(self, status: str) -> None:
        """Record a move between 'running' and 'paused'."""
        if status not in ("running", "paused"):
            raise ValueError(f"status must be 'running' or 'paused', got {status!r}")
        if self.store is not None and self.id is not None:
            self.store.set_status(self.id, status)
        self.status = status

    def record_progress(self) -> None:
        """Save a periodic resume checkpoint when one is due (see the module docstring); the
        trainer's counters reach the store with every batch of rows (`RunWriter`). Call it
        between two steps; a failing save (a full disk) raises, and the run should end."""
        trainer = self.trainer
        if trainer is not None and not trainer.done and time.monotonic() >= self._checkpoint_due:
            started = time.monotonic()
            self.save_resume_point()
            done = time.monotonic()
            self._checkpoint_due = done + next_checkpoint_gap(self.checkpoint_every, done - started)

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
        state = trainer.checkpoint_state(resumable=resumable)
        self.store.save_checkpoint(
            self.id,
            checkpoint_bytes(state),
            resume_env_steps=trainer.env_steps if resumable else None,
        )
        if resumable:
            self._saved_at = trainer.env_steps

    def close(self, status: str, error: str | None = None) -> None:
        """End the run: final counters, rows, manifest and checkpoint, then the final status.

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
            if self.store is not None and self.id is not None:
                with contextlib.suppress(Exception):
                    self.store.set_status(self.id, status, error)
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
    """Open the run and train it to its budget, recording progress about every 100 steps.

    The run ends 'finished' only once its trainer is done: its budget spent, or its goal
    (``train.stop_at_return``) reached. ``stop`` is asked before every step:
    a reason (not None) ends the run there as 'stopped' with that reason, its resume checkpoint
    saved. An exception while training or while saving its end (a full disk, say) ends it as
    'failed' with the error (returned, not raised), and so does a loop that returns short of the
    budget; a KeyboardInterrupt (or an error it caused) ends it as 'stopped' and propagates. A
    trainer that cannot be built raises.
    """
    trainer = run.open()
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
