"""Resuming a stopped run: the same run id, carrying on from where it stopped.

A run that ends 'stopped' (its owner stopped it, nobody watched it, its server shut down or went
away, Ctrl-C between two steps) saves a *resume checkpoint*: besides the weights-only part every
checkpoint has (``agent``: online and target weights, optimizer, exploration generator;
``config``; ``counters``), a ``resume`` entry with the replay memory and its priorities, every
generator, the telemetry and the timings (`rdqn.training.trainer.Trainer.checkpoint_state`). A
paused run saves one too (rows flushed first), and a training run one every minute (periodic
checkpoints, `rdqn.runs.lifecycle`), so a run whose process dies (killed, crashed; the store
marks it stopped, `RunStore.mark_interrupted`) is resumable from where it paused or from its
last periodic checkpoint. The store records which checkpoints can resume
(``runs.resume_env_steps``), so `resumable` and `resume_blocker` answer from the run's record,
without reading the file.

Resuming (`RunRegistry.resume`, `python -m rdqn resume RUN_ID`) takes two steps, the first cheap
enough for a web server (no torch), the second where the run trains (a worker, or the command
line's own process), with torch:

1. `resume_point` checks the run is stopped with a resume checkpoint whose file exists, that its
   stored config is valid, and what of the file can be checked without unpickling it: its
   digest line parses and matches its bytes (`rdqn.runs.checkpoints.verify_checkpoint`). It
   notes what the store records of the run (`Recorded`) and changes nothing.
2. `RecordedRun.open` with that point (`rdqn.runs.lifecycle`) loads the checkpoint and checks it
   whole before the run changes at all (`restore`): it resumes and matches the run's config; its
   counters are no earlier than the store recorded for this checkpoint (``resume_env_steps``)
   and no further than the run's recorded progress; and every value in it is one this run could
   have saved, which restoring it into the run's new trainer checks before it uses any of it
   (`Trainer.restore`: weights and optimizer state finite and of the agent's shapes, Adam's
   moments and steps in range, the replay memory's arrays, actions and priorities, generators,
   telemetry and timings consistent with the counters). Anything else raises `ResumeError`
   naming the run, the file and the reason, and the store is left as it was: the run stays
   'stopped', listed with its rows and file. Only then is the run taken, in one write
   (`rdqn.runs.lifecycle.record_status`, only if the store still records it as checked):
   'stopped' -> running, with any rows written after the checkpoint dropped (a run that paused,
   ran on, then died), so the resumed run's rows follow the stored ones with nothing repeated
   and nothing missing. Env steps, updates and episodes go on from the stored counts, and the
   run goes on exactly as if it had never stopped, inside an episode too (the env's state, the
   acting window and the return so far are in the checkpoint; the episode's row, written when it
   ends, is whole). A checkpoint of an older rdqn saved inside an episode without them drops the
   rest of that episode: its stored steps stay, and a new episode begins.

A run that was queued but never started when its server stopped is 'stopped' without a
checkpoint: resuming it starts it from the beginning, under the same id.

Damaged checkpoints: damaged bytes are refused at step 1, before anything is unpickled, as
"checkpoint <file> is damaged (digest mismatch); the run stays listed with its rows". A
checkpoint without a valid digest line is refused there too, as "checkpoint <file> has no valid
digest: damaged, or written by an older rdqn": a damaged line cannot be told from the missing
line of a file saved before checkpoints carried digests, so neither is loaded unchecked (such a
run can no longer be resumed; its rows stay). A checkpoint with a valid digest that was edited
(a file anyone with access to the folder can change) is refused at step 2 as "checkpoint <file>
is invalid: <what is wrong>", before any row is dropped or its status changes; a server learns
it from the run's worker, which ends with that reason ('stopped').

Size: the replay memory dominates, and it is allocated whole, so the size hardly depends on how
far the run got. Per slot: two float32 observations (obs and next obs) plus 26 bytes of action,
reward, flags and bookkeeping; proportional replay adds its sum and min trees (about 32 bytes a
slot), rank-based its priorities and order (16). Measured: per-notebook (10,000 slots, CartPole)
1.2 MB, paper 1.4 MB, e14 (50,000 slots, recurrent net) 5.9 MB, e15 6.6 MB; the telemetry adds at
most about 1 MB over a long run (20,000 logged updates). The replay memory's arrays larger than a
chunk (256 KiB) are kept in chunk files beside the checkpoint, and a save writes only those that
changed (`rdqn.runs.checkpoint_chunks`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rdqn.runs.checkpoints import (
    CheckpointError,
    load_checkpoint,
    load_checkpoint_bytes,
    verify_checkpoint,
)
from rdqn.runs.schema import ACTIVE_STATUSES, RunRecord
from rdqn.validation import is_integer

if TYPE_CHECKING:  # the config's gymnasium and the trainer's torch: only where they are used
    from rdqn.config import RunConfig
    from rdqn.runs.store import RunStore
    from rdqn.training.episodes import GreedyReturns
    from rdqn.training.evaluation import Evaluations
    from rdqn.training.trainer import Trainer

__all__ = [
    "KEPT",
    "Recorded",
    "ResumeError",
    "ResumePoint",
    "restore",
    "resumable",
    "resume_blocker",
    "resume_blocker_of",
    "resume_point",
    "stored_evaluations",
]

KEPT = "the run stays listed with its rows"
"""What a resume refused for its checkpoint leaves: the run, stopped, as it was."""


class ResumeError(ValueError):
    """A run cannot be resumed; the message names the run and says why."""


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
        from rdqn.config import RunConfig

        try:
            how = RunConfig.from_dict(record.config).train.finished_how(record.env_steps)
        except ValueError:  # settings another version wrote
            return "it finished"
        return f"it finished: {how}"
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
    if Path(checkpoint).is_dir():
        return f"its checkpoint {checkpoint} is a folder, not a checkpoint file"
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


_COUNTERS = ("env_steps", "updates", "episodes")


@dataclass(frozen=True)
class Recorded:
    """What the store records of a stopped run: the env step its checkpoint was recorded at and
    its progress. The checkpoint's counters are checked against them, and the run is taken only
    while the store still records them (`expect`)."""

    resume_env_steps: int | None
    env_steps: int
    updates: int
    episodes: int

    @classmethod
    def of(cls, record: RunRecord) -> Recorded:
        return cls(record.resume_env_steps, record.env_steps, record.updates, record.episodes)

    def expect(self) -> dict[str, Any]:
        """The run as it must still be in the store to be taken (`record_status`'s ``expect``)."""
        return {"status": "stopped", **vars(self)}


@dataclass(frozen=True)
class ResumePoint:
    """Where a stopped run resumes: its stored config, its checkpoint and what the store records
    of it (`resume_point`); what a worker is given to resume it."""

    run_id: str
    config: RunConfig
    checkpoint: Path | None
    """The resume checkpoint; None for a run that never started (it starts afresh)."""
    recorded: Recorded
    data: bytes | None = None
    """The checkpoint's bytes, for a worker that cannot read the file (named by ``checkpoint``
    in what it says)."""
    chunks: Mapping[str, bytes] | None = None
    """With ``data``: the chunks of its chunk folder (`rdqn.runs.checkpoint_chunks`)."""
    greedy: GreedyReturns | None = None
    evaluations: Evaluations | None = None
    """The run's greedy evaluations, as stored: the resumed trainer's go on from those up to
    where it resumes."""
    """The greedy episodes the run played for its watchers, as stored: the resumed run's
    watcher goes on from those up to where it resumes."""


def stored_evaluations(store: RunStore, run_id: str, episodes: int | None = None) -> Evaluations:
    """The run's greedy evaluations of ``episodes`` episodes each (None: as many as its rows
    have), as the store keeps them."""
    from rdqn.training.evaluation import Evaluations

    frame = store.metrics.evaluations(run_id)
    if episodes is None:
        episodes = int(frame["episode"].max()) + 1 if len(frame) else 1
    return Evaluations.from_rows(
        *(frame[name].to_numpy() for name in ("env_steps", "episode", "return", "length")),
        episodes=episodes,
    )


def resume_point(store: RunStore | None, run_id: str) -> ResumePoint:
    """Check that ``run_id`` can be resumed from ``store`` and where from, reading no more of its
    checkpoint than its digest (step 1 of the module docstring); changes nothing.

    Raises `ResumeError` (a ``ValueError``) naming the run and why not: no store, an unknown id,
    a run that is not stopped (queued, running, paused, finished, failed), no resume checkpoint
    (saved before resuming existed, or none at all), a stored config that is not valid, a
    checkpoint that is missing, unreadable, without a valid digest or damaged (its digest does
    not match its bytes). What the file holds is checked where the run resumes (`restore`).
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
    from rdqn.config import RunConfig

    try:
        config = RunConfig.from_dict(record.config)
    except ValueError as err:
        raise ResumeError(
            f"cannot resume run {run_id}: its stored config is invalid: {err}"
        ) from err
    path = None if record.checkpoint_path is None else Path(record.checkpoint_path)
    if path is not None:
        try:
            verify_checkpoint(path)
        except CheckpointError as err:
            raise ResumeError(f"cannot resume run {run_id}: {err}; {KEPT}") from err
    return ResumePoint(
        run_id,
        config,
        path,
        Recorded.of(record),
        greedy=store.metrics.greedy_returns(run_id),
        evaluations=stored_evaluations(store, run_id, config.train.eval_episodes),
    )


def restore(point: ResumePoint, trainer: Trainer) -> tuple[int, int, int]:
    """Load the point's checkpoint, check it whole and restore it into ``trainer`` (new, of the
    point's config); return its counters (env steps, updates, episodes), all 0 for a run that
    never started (nothing to restore). Step 2 of the module docstring: `ResumeError`, one line
    naming the run and the file, for anything a trainer of this run could not have saved.
    Loading needs torch: this runs where the run trains."""
    run_id, path = point.run_id, point.checkpoint
    if path is None:
        return 0, 0, 0
    try:
        if point.data is None:
            state = load_checkpoint(path)
        else:
            state = load_checkpoint_bytes(point.data, source=str(path), chunks=point.chunks)
    except CheckpointError as err:
        raise ResumeError(f"cannot resume run {run_id}: {err}; {KEPT}") from err
    from rdqn.config import RunConfig
    from rdqn.training.state import RESUME_KEY

    if not isinstance(state.get(RESUME_KEY), dict):
        raise ResumeError(
            f"cannot resume run {run_id}: its checkpoint {path} holds no resume state"
        )
    try:
        saved_config = RunConfig.from_dict(state["config"])
    except (KeyError, TypeError, ValueError):
        saved_config = None
    if saved_config != point.config:
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
    problem = _counters_problem(point.recorded, counters)
    if problem is not None:
        raise ResumeError(
            f"cannot resume run {run_id}: checkpoint {path} is invalid: counters: {problem}; {KEPT}"
        )
    try:
        trainer.restore(state)
    except Exception as err:  # noqa: BLE001 - whatever a wrong state makes a restore raise
        raise ResumeError(
            f"cannot resume run {run_id}: checkpoint {path} is invalid: {_detail(err)}; {KEPT}"
        ) from err
    return counters["env_steps"], counters["updates"], counters["episodes"]


def _counters_problem(recorded: Recorded, counters: dict[str, int]) -> str | None:
    """What is wrong with a checkpoint's counters, given what the store recorded: the env step it
    saved the checkpoint at (``runs.resume_env_steps``), which they never fall below, and the
    run's progress, which they never pass (rows are written before a checkpoint is saved). A
    file newer than its record (the process died between writing the file and recording it) is
    within both, and resumes from where it was saved."""
    env_steps = counters["env_steps"]
    recorded_at = recorded.resume_env_steps
    if recorded_at is not None and env_steps < recorded_at:
        return (
            f"env_steps is {env_steps:,}, before env step {recorded_at:,}, where the store "
            "recorded this checkpoint"
        )
    for name in _COUNTERS:
        limit = getattr(recorded, name)
        if counters[name] > limit:
            return (
                f"{name} is {counters[name]:,}, past the {limit:,} the store recorded for the run"
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
