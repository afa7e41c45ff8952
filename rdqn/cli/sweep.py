"""``rdqn sweep``: a grid of runs over config fields and seeds, on worker processes or Ray.

    python -m rdqn sweep --preset paper --grid replay.alpha=0,0.4,0.6,0.8,1 \\
        --grid replay.scheme=proportional,rank --seeds 5 --steps 3000
    python -m rdqn sweep --file sweep.toml --workers 2     # the same, from a TOML file
    python -m rdqn sweep --resume SWEEP_ID --ray local     # go on with an interrupted sweep
    python -m rdqn sweep show SWEEP_ID                     # per cell: AUC, steps to threshold
    python -m rdqn sweep list

The sweep is checked whole before anything is filed (`rdqn.sweeps.spec`); the same sweep asked
for again has the same id and skips its finished trials. Ctrl-C (or SIGTERM) stops every trial
between two steps, 'stopped' and resumable, with exit status 130 (143). See docs/sweeps.md.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from rdqn.cli.interrupts import StopSignals
from rdqn.cli.options import check_writable, parse_set, write_output
from rdqn.cli.usage import UsageError, set_help
from rdqn.envs import ENV_IDS
from rdqn.presets import PRESETS
from rdqn.runs.store import RunStore, StoreMissing, default_home
from rdqn.sweeps import (
    SweepBusy,
    SweepResult,
    SweepSpec,
    grid_from_items,
    list_sweeps,
    load_spec,
    run_sweep,
    summary,
    sweep_trials,
)
from rdqn.sweeps.tasks import ray_module

__all__ = ["add_sweep_parser", "cmd_sweep"]

_DEFINING = ("preset", "grid", "seeds", "steps", "set", "env")
"""Options that define a sweep; --file and --resume take the whole sweep from elsewhere."""


def add_sweep_parser(sub: Any) -> None:
    """The ``sweep`` command and its options."""
    sweep: argparse.ArgumentParser = sub.add_parser(
        "sweep",
        help="a grid of runs over config fields and seeds (worker processes or Ray)",
        description="Train one run per grid cell and seed, recorded in the run store under a "
        "sweep id; the same sweep again skips its finished trials. 'show ID' summarises a "
        "sweep per cell, 'list' lists the sweeps.",
        epilog=set_help().replace("--set KEY=VALUE", "--grid KEY=V1,V2,... and --set"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sweep.add_argument("action", nargs="?", choices=["show", "list"], help="show ID, or list")
    sweep.add_argument("sweep_id", nargs="?", help="the sweep to show")
    sweep.add_argument("--preset", choices=list(PRESETS), help="the preset every trial starts from")
    sweep.add_argument(
        "--grid",
        action="append",
        metavar="KEY=V1,V2,...",
        help="a config field and its values (JSON, or bare words); repeatable",
    )
    sweep.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        help="one number: that many seeds (0, 1, ...); several: those seeds (default 3)",
    )
    sweep.add_argument("--steps", type=int, help="env steps per trial (default: the preset's)")
    sweep.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="a field set in every trial"
    )
    sweep.add_argument("--env", choices=list(ENV_IDS), help="environment (default: the preset's)")
    sweep.add_argument("--file", help="a TOML sweep file instead of the options above")
    sweep.add_argument("--resume", metavar="SWEEP_ID", help="go on with a recorded sweep")
    sweep.add_argument(
        "--workers", type=int, help="trials at once (default: one per core; Ray: its CPUs)"
    )
    sweep.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run trials as Ray actors: 'local' starts Ray here, or a cluster's address "
        "('auto', host:port); needs pip install -r requirements-ray.txt",
    )
    sweep.add_argument("--threshold", type=float, help="return threshold for the summary")
    sweep.add_argument("--out", help="show: also write the summary as CSV to this file")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")


def _db(args: argparse.Namespace) -> Path:
    return (Path(args.home) if args.home else default_home()) / "rdqn.db"


def _given(args: argparse.Namespace) -> list[str]:
    return [f"--{name}" for name in _DEFINING if getattr(args, name) is not None]


def _check(args: argparse.Namespace) -> None:
    if args.action is None and args.sweep_id is not None:
        raise UsageError(
            f"unexpected {args.sweep_id!r}: did you mean 'sweep show {args.sweep_id}'?"
        )
    if args.action == "show" and args.sweep_id is None:
        raise UsageError("sweep show needs a SWEEP_ID (python -m rdqn sweep list shows them)")
    if args.action == "list" and args.sweep_id is not None:
        raise UsageError(f"sweep list takes no SWEEP_ID, got {args.sweep_id!r}")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if args.threshold is not None and not math.isfinite(args.threshold):
        raise UsageError(f"--threshold must be a finite number, got {args.threshold}")
    if args.action is not None:
        return
    sources = [flag for flag in ("--file", "--resume") if getattr(args, flag[2:]) is not None]
    if len(sources) > 1:
        raise UsageError("give --file or --resume, not both")
    if sources and _given(args):
        raise UsageError(f"{sources[0]} holds the whole sweep; leave out {', '.join(_given(args))}")
    if not sources and args.preset is None:
        raise UsageError("sweep needs --preset NAME and --grid KEY=V1,V2,... (or --file, --resume)")


def _spec(args: argparse.Namespace) -> SweepSpec | None:
    """The sweep the options define (None for --resume: it is in the store)."""
    if args.file is not None:
        return SweepSpec.from_toml(args.file)
    if args.resume is not None:
        return None
    seeds: Any = args.seeds or [3]
    fixed = parse_set(args.set or [])
    if args.env is not None:
        fixed["env.id"] = args.env
    return SweepSpec.from_grid(
        args.preset,
        grid_from_items(args.grid or []),
        seeds[0] if len(seeds) == 1 else seeds,
        args.steps,
        overrides=fixed,
    )


def cmd_sweep(args: argparse.Namespace) -> int:
    """``rdqn sweep``: 0 when every trial finished (or a summary was shown), 1 when one
    failed, 130 (143) when Ctrl-C (SIGTERM) stopped it."""
    _check(args)
    spec = _spec(args) if args.action is None else None  # checked before the store opens
    if args.ray is not None and args.action is None:
        ray_module()  # the install hint before anything is filed
    if args.out is not None:
        check_writable(Path(args.out), "--out")
    try:
        store = RunStore(_db(args), create=args.action is None)
    except StoreMissing as missing:
        if args.action == "list":  # a read creates nothing, and finds nothing
            print(f"no sweeps stored yet: {missing}")
            return 0
        raise UsageError(
            f"no sweep {args.sweep_id!r}: {missing}; check --home or RDQN_HOME"
        ) from None
    try:
        if args.action == "list":
            return _list(store)
        if args.action == "show":
            return _show(store, args)
        if spec is None:
            spec = load_spec(store, args.resume)
        return _run(store, spec, args)
    finally:
        store.close()


def _run(store: RunStore, spec: SweepSpec, args: argparse.Namespace) -> int:
    store.mark_interrupted()  # trials whose process died read 'stopped': resumable
    trials = spec.trials()
    cells = len(trials) // len(spec.seeds)
    print(
        f"sweep {spec.id}: {len(trials)} trials ({cells} cells x {len(spec.seeds)} seeds) of "
        f"{spec.preset}; runs in {store.path} (group {spec.id})",
        flush=True,
    )
    try:
        with StopSignals() as signals:
            result = run_sweep(
                spec,
                store,
                workers=args.workers,
                ray=args.ray,
                progress=not args.quiet,
                stop=signals.requested,
            )
    except SweepBusy as err:
        print(f"rdqn: {err}", file=sys.stderr)
        return 1
    _report(result)
    if result.stopped is None:
        _print_table(summary(store, spec.id, threshold=args.threshold), spec)
    if result.stopped is not None and signals.exit_status is not None:
        return signals.exit_status
    return 0 if result.complete else 1


def _report(result: SweepResult) -> None:
    counts = ", ".join(
        f"{result.count(status)} {status}"
        for status in ("finished", "failed", "stopped")
        if result.count(status)
    )
    before = f" ({result.skipped} finished before)" if result.skipped else ""
    print(f"sweep {result.sweep_id}: {counts}{before}")
    for outcome in result.trials:
        if outcome.status == "failed":
            print(f"  failed: {outcome.key} (run {outcome.run_id}): {outcome.error}")
    if result.stopped is not None:
        print(
            f"sweep {result.sweep_id} {result.stopped}: every trial is stored as it ended; "
            f"`python -m rdqn sweep --resume {result.sweep_id}` goes on",
            file=sys.stderr,
        )
    print(f"results: python -m rdqn sweep show {result.sweep_id} (spec {result.spec_path})")


def _print_table(frame: pd.DataFrame, spec: SweepSpec) -> None:
    """The summary's main columns: the grid fields, then AUC (its IQM with its 95 % interval's
    ends too) and steps to threshold."""
    keep = [*(list(spec.grid) or ["cell"]), "finished", "seeds", "auc_mean", "auc_median"]
    keep += ["auc_iqm", "auc_iqm_low", "auc_iqm_high"]
    keep += ["reached", "steps_to_threshold_median", "final_return_mean"]
    print(frame[keep].to_string(index=False, float_format=lambda v: f"{v:,.3g}"))


def _show(store: RunStore, args: argparse.Namespace) -> int:
    spec = load_spec(store, args.sweep_id)
    trials = sweep_trials(store, spec)
    statuses = trials["status"].fillna("not run").value_counts()
    grid = "; ".join(f"{name} = {list(values)}" for name, values in spec.grid.items())
    steps = f", {spec.steps:,} steps" if spec.steps else ""
    print(f"sweep {spec.id}: {spec.preset}{steps}, seeds {list(spec.seeds)}")
    print(f"  grid: {grid or '(none)'}")
    if spec.overrides:
        print(f"  set: {spec.overrides}")
    print("  trials: " + ", ".join(f"{n} {status}" for status, n in statuses.items()))
    for row in trials[trials["status"] == "failed"].itertuples(index=False):
        print(f"  failed: {row.key} (run {row.run_id}): {row.error}")
    frame = summary(store, spec.id, threshold=args.threshold)
    _print_table(frame, spec)
    if args.out is not None:
        csv = frame.assign(run_ids=frame["run_ids"].map(" ".join)).to_csv(index=False)
        write_output(Path(args.out), csv, "--out")
        print(f"summary written to {args.out}")
    return 0


def _list(store: RunStore) -> int:
    frame = list_sweeps(store)
    if frame.empty:
        print(f"no sweeps in {store.path.parent}")
        return 0
    print(frame.drop(columns=["created_at"]).to_string(index=False))
    return 0
