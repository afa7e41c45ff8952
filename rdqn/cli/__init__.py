"""Command line: `python -m rdqn train | resume | compare | runs | sweep | experiment | dashboard`.

    python -m rdqn train --preset e14 --env rdqn/MaskedCartPole-v0 --steps 20000 --seed 0 \\
        --set replay.alpha=0.7
    python -m rdqn resume RUN_ID     # a stopped run, from where it stopped, to its budget
    python -m rdqn compare --preset per-notebook --steps 30000 --seeds 0 1 2
    python -m rdqn runs list | show ID | export ID [--kind steps] [--out FILE] | delete ID
    python -m rdqn warm-up           # compile the kernels once, at install (numba's disk cache)
    python -m rdqn experiment cliffwalk | per-notebook | tables   # docs/experiments.md
    python -m rdqn sweep --preset paper --grid replay.alpha=0,0.6,1 --seeds 5   # docs/sweeps.md
    python -m rdqn dashboard --port 8501 [--address 0.0.0.0] [--home DIR]     # the Streamlit app

Every run is written to the run store ($RDQN_HOME or ./.rdqn, or --home). Bad arguments print one
line naming the argument and its value and exit with status 2, before any run is filed: configs
and options are checked before the store is opened, against the server's limits too
(`rdqn.limits`, RDQN_LIMIT_* variables), and the env is built once to check its options and its
prices CSV. Output files (--out, --report) are checked for writing before the work that fills
them. Reading commands (``runs``, ``resume``) create no store where there is none. Ctrl-C (or
SIGTERM) while a command trains stops its runs between two steps, 'stopped' and resumable, with
exit status 130 (143); a second Ctrl-C aborts at once (`interrupts`). This package is the one
place in `rdqn` that prints: `parser` and `options` read the arguments, `progress` draws the
bars, and a module per command (`train`, `compare`, `runs`, `sweep`, `presets`, `warm_up`,
`dashboard`) runs it; `main` dispatches.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rdqn.cli.compare import Comparison, cmd_compare, comparison
from rdqn.cli.dashboard import cmd_dashboard
from rdqn.cli.experiment import cmd_experiment
from rdqn.cli.parser import build_parser, cached_parser
from rdqn.cli.presets import cmd_presets
from rdqn.cli.progress import Progress
from rdqn.cli.runs import cmd_runs, cmd_without_store
from rdqn.cli.sweep import cmd_sweep
from rdqn.cli.train import NAME_MAX, cmd_resume, cmd_train, train_config
from rdqn.cli.usage import UsageError
from rdqn.cli.warm_up import cmd_warm_up
from rdqn.limits import check_threads
from rdqn.runs.store import RunStore, StoreError, StoreMissing, default_home
from rdqn.serve.executors import ExecutorUnavailable
from rdqn.serve.ray_start import start_given_up

__all__ = ["NAME_MAX", "Comparison", "Progress", "UsageError", "build_parser", "main", "run"]

_LINE_BREAKS = re.compile(r"\s*\n\s*")


def run(prog: str = "rdqn") -> NoReturn:
    """The ``rdqn`` process: `main`, then exit with its status. A command that a signal stopped
    (130, 143) ignores Ctrl-C while the process ends (a stop is often quicker than a hand that
    presses Ctrl-C three times, and Python gives SIGINT back to the system late in its exit):
    another one there killed the process by the signal instead (status -2). A local Ray's start
    given up on still running in a thread ends the process at once (`start_given_up`)."""
    try:
        code: object = main(prog=prog)
    except SystemExit as done:  # argparse, and an experiment stopped by Ctrl-C
        code = done.code
    if code in (130, 143) and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # kept to the end: Python resets handlers
    if start_given_up() and (code is None or isinstance(code, int)):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code or 0)
    sys.exit(code)


def main(argv: Sequence[str] | None = None, *, prog: str = "rdqn") -> int:
    """Entry point of the ``rdqn`` command (and of ``python -m rdqn``); returns the exit status."""
    try:
        args = cached_parser(prog).parse_args(argv)  # building it imports the experiments
        if args.command == "presets":
            return cmd_presets()
        if args.command == "warm-up":
            return cmd_warm_up(args)
        if args.command == "experiment":  # runs no recorded run: no store
            return cmd_experiment(args)
        if args.command == "dashboard":  # the server opens the store
            return cmd_dashboard(args)
        if args.command == "sweep":
            return cmd_sweep(args)  # it opens the store as its action needs
        if getattr(args, "threads", 1) < 1:
            raise UsageError(f"--threads must be >= 1, got {args.threads}")
        if hasattr(args, "threads"):
            check_threads(args.threads)
            import torch

            torch.set_num_threads(args.threads)
        # Bad arguments are refused before the store is opened, let alone a run filed.
        config = train_config(args) if args.command == "train" else None
        plan = comparison(args) if args.command == "compare" else None
        db = (Path(args.home) if args.home else default_home()) / "rdqn.db"
        try:
            # Commands that read (runs, resume) create no store where there is none.
            store = RunStore(db, create=args.command not in ("runs", "resume"))
        except StoreMissing as missing:
            return cmd_without_store(args, missing)
        try:
            if config is not None:
                return cmd_train(args, store, config)
            if plan is not None:
                return cmd_compare(args, store, plan)
            if args.command == "resume":
                return cmd_resume(args, store)
            return cmd_runs(args, store)
        finally:
            store.close()
    except (UsageError, ValueError, ExecutorUnavailable, StoreError) as err:
        # One line, whatever a library's message (torch's span several) holds.
        message = _LINE_BREAKS.sub(" ", str(err).strip())
        print(f"rdqn: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Before a run began, or a Ctrl-C long after the first (`rdqn.cli.interrupts`): a run it
        # started is filed 'stopped', resumable if it had saved a checkpoint by then.
        print("rdqn: interrupted (`rdqn runs list` shows any run it left)", file=sys.stderr)
        return 130
