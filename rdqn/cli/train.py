"""``rdqn train`` and ``rdqn resume``: one run trained to its budget in this process, with a
progress bar, and one line on how it ended."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from rdqn.cli.interrupts import StopSignals
from rdqn.cli.options import config_from_args
from rdqn.cli.progress import Progress
from rdqn.cli.usage import UsageError
from rdqn.compare import ROLLING_WINDOW
from rdqn.config import RunConfig
from rdqn.runs.lifecycle import RecordedRun, run_to_end
from rdqn.runs.resume import ResumePoint, resume_point
from rdqn.runs.store import RunStore
from rdqn.validation import shown

NAME_MAX = 200
"""Characters in a run's ``--name``."""


def _train_to_end(run: RecordedRun, quiet: bool, label: str, signals: StopSignals) -> None:
    """Train ``run`` to its budget through the run lifecycle, with a progress bar; a SIGINT or
    SIGTERM stops it between two steps (see `rdqn.cli.interrupts`)."""
    bar = Progress(run.config.train.total_steps, label, enabled=not quiet)
    try:
        run_to_end(run, progress=bar, stop=signals.requested)
        if run.trainer is not None:
            bar(run.trainer)
    finally:
        bar.close()
    if run.status == "failed":
        print(f"run {run.id} failed: {run.error}", file=sys.stderr)
    elif run.status == "stopped":
        print(f"run {run.id} {run.error}: `rdqn resume {run.id}` goes on", file=sys.stderr)


def _report(run: RecordedRun, signals: StopSignals) -> int:
    """Print how the run ended; the exit status (0: finished; 128 + the signal's number when
    one stopped it: 130 for Ctrl-C)."""
    trainer = run.trainer
    assert trainer is not None  # run_to_end raises when no trainer could be built
    returns = trainer.recorder.episode_returns
    final = np.mean(returns[-ROLLING_WINDOW:]) if returns else float("nan")
    print(
        f"run {run.id}: {run.status}, {trainer.env_steps:,} env steps, "
        f"{trainer.updates:,} updates, {trainer.episodes:,} episodes, "
        f"mean return of the last {ROLLING_WINDOW} episodes {final:.1f}"
    )
    if run.status == "stopped" and signals.exit_status is not None:
        return signals.exit_status
    return 0 if run.status == "finished" else 1


def train_config(args: argparse.Namespace) -> RunConfig:
    """The config ``rdqn train`` would run, checked (``--name`` too) before the store opens."""
    name = args.name
    if name is not None and (len(name) > NAME_MAX or not name.isprintable()):
        raise UsageError(
            f"--name must be at most {NAME_MAX} printable characters (no newlines or control "
            f"characters), got {shown(name)}"
        )
    config = config_from_args(args)
    if args.seed is not None:
        config = config.with_overrides({"seed": args.seed})
    return config


def cmd_train(args: argparse.Namespace, store: RunStore, config: RunConfig) -> int:
    """``rdqn train``: the exit status (0: the run finished; 130: stopped by Ctrl-C)."""
    with StopSignals() as signals:
        run = RecordedRun(config, store, name=args.name)
        _train_to_end(run, args.quiet, "train", signals)
    return _report(run, signals)


def _agree_to_lose(point: ResumePoint, yes: bool) -> None:
    """A run that recorded steps after its last checkpoint (its process died between two) goes
    on from the checkpoint, and those steps' rows are dropped: say how many, and go on only with
    ``--yes`` or a "y" typed at a terminal (`UsageError` otherwise)."""
    recorded = point.recorded
    start = recorded.resume_env_steps if point.checkpoint is not None else 0
    lost = recorded.env_steps - (start or 0)
    if lost <= 0:
        return
    what = (
        f"run {point.run_id} resumes from env step {start or 0:,} (its last checkpoint) and "
        f"discards the {lost:,} env steps it recorded after it"
    )
    if yes:
        print(f"rdqn: {what}", file=sys.stderr)
        return
    if sys.stdin.isatty() and sys.stderr.isatty():
        answer = input(f"rdqn: {what}. Go on? [y/N] ")
        if answer.strip().lower() in ("y", "yes"):
            return
    raise UsageError(f"{what}; add --yes to go on")


def cmd_resume(args: argparse.Namespace, store: RunStore) -> int:
    """``rdqn resume RUN_ID``: the exit status (0: the run finished; 130: stopped by Ctrl-C)."""
    # A run whose process died is still 'running' or 'paused' in the store: mark it stopped.
    store.mark_interrupted()
    point = resume_point(store, args.run_id)
    _agree_to_lose(point, args.yes)
    run = RecordedRun(point.config, store, resume=point)
    with StopSignals() as signals:
        run.open()  # its checkpoint checked whole (refused in one line) before a progress bar
        _train_to_end(run, args.quiet, "resume", signals)
    return _report(run, signals)
