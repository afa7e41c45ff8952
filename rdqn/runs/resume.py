"""Resuming a stopped run: the same run id, carrying on from where it stopped.

A run that ends 'stopped' (its owner stopped it, nobody watched it, its server shut down or went
away, Ctrl-C between two steps) saves a *resume checkpoint*: besides the weights-only part every
checkpoint has (``agent``: online and target weights, optimizer, exploration generator;
``config``; ``counters``), a ``resume`` entry with the replay memory and its priorities, every
generator, the telemetry and the timings (`rdqn.training.trainer.Trainer.checkpoint_state`). A
paused run saves one too (rows flushed first), and a training run one every minute (periodic
checkpoints, `rdqn.runs.lifecycle`), so a run whose process dies (killed, crashed; the store
marks it stopped, `RunStore.mark_interrupted`) is resumable from where it paused or from its
last periodic checkpoint. The store records which
checkpoints can resume (``runs.resume_env_steps``), so `resumable` and `resume_blocker` answer
from the run's record, without reading the file.

Resuming (`RunRegistry.resume`, `python -m rdqn resume RUN_ID`):

1. `resume_point` checks the run is stopped and its checkpoint loads (it carries a digest that
   matches its bytes, `rdqn.runs.checkpoints`), resumes and matches the run's config, and that
   every value in it is one this run could have saved: its counters are no earlier than the
   store recorded for this checkpoint (``runs.resume_env_steps``) and no further than the run's
   recorded progress, and the whole state restores into a throwaway trainer of the stored
   config (`rdqn.training.trainer.check_resume_state`: weights and optimizer state finite and
   of the agent's shapes, Adam's moments and steps in range, the replay memory's arrays,
   actions and priorities, generators, telemetry and timings consistent with the counters).
   Anything else raises `ResumeError` naming the run, the file and the reason, and changes
   nothing: the run stays 'stopped', listed with its rows.
2. `prepare_resume` sets the run back to 'created' with the checkpoint's counters, dropping any
   rows written after the checkpoint (a run that paused, ran on, then died), so the resumed run's
   rows follow the stored ones with nothing repeated and nothing missing. Only a checkpoint
   that passed step 1 gets here.
3. A worker builds a trainer of the stored config and restores the checkpoint into it
   (`Trainer.restore`, which checks it again): env steps, updates and episodes go on from the
   stored counts, and training continues at the next episode boundary. Stopped between two
   episodes, the run goes on exactly as if it had never stopped; stopped inside one, that
   episode's stored steps and rows stay, its end is never seen (no episode row), and a new
   episode begins.

A run that was queued but never started when its server stopped is 'stopped' without a
checkpoint: resuming it starts it from the beginning, under the same id.

Damaged checkpoints: damaged bytes are refused at step 1, before anything is
unpickled, as "checkpoint <file> is damaged (digest mismatch); the run stays listed with its
rows". A checkpoint without a valid digest line is refused there too, as "checkpoint <file> has
no valid digest: damaged, or written by an older rdqn": a damaged line cannot be told from the
missing line of a file saved before checkpoints carried digests, so neither is loaded unchecked
(such a run can no longer be resumed; its rows stay). A checkpoint with a valid digest that was
edited (a file anyone with access to the folder can change) is refused at step 1 as "checkpoint
<file> is invalid: <what is wrong>", before any row is dropped or its status changes. Should a
worker's restore still fail (the file replaced after step 1), `RecordedRun.open` turns whatever
it raises into a `ResumeError` naming the run and the file, and the run is 'stopped' again with
it as its error.

Size: the replay memory dominates, and it is allocated whole, so the size hardly depends on how
far the run got. Per slot: two float32 observations (obs and next obs) plus 26 bytes of action,
reward, flags and bookkeeping; proportional replay adds its sum and min trees (about 32 bytes a
slot), rank-based its priorities and order (16). Measured: per-notebook (10,000 slots, CartPole)
1.2 MB, paper 1.4 MB, e14 (50,000 slots, recurrent net) 5.9 MB, e15 6.6 MB; the telemetry adds at
most about 1 MB over a long run (20,000 logged updates).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rdqn.config import RunConfig
from rdqn.runs.checkpoints import CheckpointError, load_checkpoint
from rdqn.runs.schema import ACTIVE_STATUSES, RunRecord
from rdqn.runs.store import KEPT, ResumeError, RunStore
from rdqn.training.state import RESUME_KEY
from rdqn.validation import is_integer

__all__ = [
    "ResumeError",
    "ResumePoint",
    "prepare_resume",
    "reopen",
    "resumable",
    "resume_blocker",
    "resume_blocker_of",
    "resume_point",
]


def resume_blocker_of(record: RunRecord) -> str | None:
    """Why the run of ``record`` cannot be resumed, or None when it can; the checkpoint is not
    read, only whether its file exists.

    Resumable: a 'stopped' run whose checkpoint holds a resume state, and a 'stopped' run that
    never started (queued when its server stopped; it starts from the beginning).
    """
    status = record.status
    if status == "created":
        return "it has not started yet"
    if status in ACTIVE_STATUSES:
        return f"it is {status}, not stopped"
    if status == "finished":
        return "it finished: its budget of steps is spent"
    if status == "failed":
        return "it failed; only a stopped run can be resumed"
    checkpoint = record.checkpoint_path
    if checkpoint is None:
        if record.env_steps == 0:
            return None
        return "it has no checkpoint (its process ended before it could save one)"
    if record.resume_env_steps is None:
        return (
            "its checkpoint holds no resume state (saved by an rdqn without resuming, or the "
            "run was cut off inside a step): only its weights can be loaded"
        )
    if not Path(checkpoint).is_file():
        return f"its checkpoint {checkpoint} is missing"
    return None


def resume_blocker(store: RunStore, run_id: str) -> str | None:
    """`resume_blocker_of` the stored run ``run_id`` (an unknown id is a reason too)."""
    try:
        record = store.get_run(run_id)
    except KeyError:
        return f"there is no run with this id in {store.path}"
    return resume_blocker_of(record)


def resumable(store: RunStore, run_id: str) -> bool:
    """Whether the stored run ``run_id`` can be resumed (one row read; see `resume_blocker_of`)."""
    return resume_blocker(store, run_id) is None


@dataclass(frozen=True)
class ResumePoint:
    """Where a stopped run resumes: its stored config, the checkpoint and its counters."""

    run_id: str
    config: RunConfig
    checkpoint: Path | None
    """The resume checkpoint; None for a run that never started (it starts afresh)."""
    env_steps: int = 0
    updates: int = 0
    episodes: int = 0


def resume_point(store: RunStore | None, run_id: str) -> ResumePoint:
    """Check that ``run_id`` can be resumed from ``store`` and where from; changes nothing.

    Raises `ResumeError` (a ``ValueError``) naming the run and why not: no store, an unknown id,
    a run that is not stopped (queued, running, paused, finished, failed), no resume checkpoint
    (saved before resuming existed, or none at all), a checkpoint that is missing, unreadable,
    without a valid digest or damaged (its digest does not match its bytes,
    `rdqn.runs.checkpoints`: refused before anything is unpickled), that belongs to another
    config, or that holds a state this run could not have saved: counters other than the store
    recorded for it, or anything `rdqn.training.trainer.check_resume_state` refuses (the
    module docstring, step 1).
    """
    if store is None:
        raise ResumeError(f"cannot resume run {run_id}: runs kept in memory only cannot resume")
    try:
        record = store.get_run(run_id)
    except KeyError:
        raise ResumeError(
            f"cannot resume run {run_id}: there is no run with this id in {store.path}"
        ) from None
    blocker = resume_blocker_of(record)
    if blocker is not None:
        raise ResumeError(f"cannot resume run {run_id}: {blocker}")
    try:
        config = RunConfig.from_dict(record.config)
    except ValueError as err:
        raise ResumeError(
            f"cannot resume run {run_id}: its stored config is invalid: {err}"
        ) from err
    if record.checkpoint_path is None:
        return ResumePoint(run_id=run_id, config=config, checkpoint=None)
    path = Path(record.checkpoint_path)
    try:
        state = load_checkpoint(path)
    except CheckpointError as err:
        raise ResumeError(f"cannot resume run {run_id}: {err}; {KEPT}") from err
    if not isinstance(state.get(RESUME_KEY), dict):
        raise ResumeError(
            f"cannot resume run {run_id}: its checkpoint {path} holds no resume state"
        )
    try:
        saved_config = RunConfig.from_dict(state["config"])
    except (KeyError, TypeError, ValueError):
        saved_config = None
    if saved_config != config:
        raise ResumeError(
            f"cannot resume run {run_id}: its checkpoint {path} was saved by another config"
        )
    try:
        counters = {name: _count(state["counters"][name]) for name in _COUNTERS}
    except (KeyError, TypeError, ValueError) as err:
        raise ResumeError(
            f"cannot resume run {run_id}: checkpoint {path} is damaged (its counters cannot be "
            f"read: {type(err).__name__}: {err}); {KEPT}"
        ) from err
    problem = _counters_problem(record, counters)
    if problem is not None:
        raise ResumeError(
            f"cannot resume run {run_id}: checkpoint {path} is invalid: counters: {problem}; {KEPT}"
        )
    from rdqn.training.trainer import check_resume_state  # torch and the kernels: only here

    try:
        check_resume_state(config, state)
    except Exception as err:  # noqa: BLE001 - whatever a wrong state makes a restore raise
        raise ResumeError(
            f"cannot resume run {run_id}: checkpoint {path} is invalid: {_detail(err)}; {KEPT}"
        ) from err
    return ResumePoint(run_id=run_id, config=config, checkpoint=path, **counters)


_COUNTERS = ("env_steps", "updates", "episodes")


def _counters_problem(record: RunRecord, counters: dict[str, int]) -> str | None:
    """What is wrong with a checkpoint's counters, given what the store recorded: the env step it
    saved the checkpoint at (``runs.resume_env_steps``), which they never fall below, and the
    run's progress, which they never pass (rows are written before a checkpoint is saved). A
    file newer than its record (the process died between writing the file and recording it) is
    within both, and resumes from where it was saved."""
    env_steps = counters["env_steps"]
    recorded_at = record.resume_env_steps
    if recorded_at is not None and env_steps < recorded_at:
        return (
            f"env_steps is {env_steps:,}, before env step {recorded_at:,}, where the store "
            "recorded this checkpoint"
        )
    for name in _COUNTERS:
        recorded = getattr(record, name)
        if counters[name] > recorded:
            return (
                f"{name} is {counters[name]:,}, past the {recorded:,} the store recorded for the "
                "run"
            )
    return None


def _detail(error: BaseException) -> str:
    """An error as one line: its message, after its type unless it is a refused state's."""
    from rdqn.replay.state_checks import ReplayStateError
    from rdqn.training.state import ResumeStateError

    text = str(error)
    if not isinstance(error, ResumeStateError | ReplayStateError):
        text = f"{type(error).__name__}: {text}"
    return " ".join(text.split())


def _count(value: Any) -> int:
    if not is_integer(value) or value < 0:
        raise ValueError(f"expected a count, got {value!r}")
    return int(value)


def reopen(store: RunStore, point: ResumePoint) -> None:
    """Set the run back to 'created' at the point's counters, rows past them dropped
    (`RunStore.reopen`); a worker given the point's checkpoint then resumes it."""
    store.reopen(
        point.run_id, env_steps=point.env_steps, updates=point.updates, episodes=point.episodes
    )


def prepare_resume(store: RunStore | None, run_id: str) -> ResumePoint:
    """`resume_point`, then `reopen`: the run is ready for a worker to resume."""
    point = resume_point(store, run_id)
    assert store is not None
    reopen(store, point)
    return point
