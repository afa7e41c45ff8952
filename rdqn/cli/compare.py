"""``rdqn compare``: replay schemes on the same env and seeds, trained in worker processes, with
a progress bar per run, then a summary table and an HTML report."""

from __future__ import annotations

import argparse
import math
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rdqn.cli.interrupts import StopSignals
from rdqn.cli.options import check_writable, config_from_args, write_output
from rdqn.cli.progress import Progress
from rdqn.cli.usage import UsageError
from rdqn.compare import (
    Curve,
    comparison_configs,
    comparison_threshold,
    shown_intervals,
    summary_table,
)
from rdqn.config import RunConfig
from rdqn.limits import check_comparison_runs, check_threads
from rdqn.runs.lifecycle import INTERRUPTED_BY_USER
from rdqn.runs.resume import stored_evaluations
from rdqn.runs.store import RunStore
from rdqn.serve.executors import Executor, executor_from_env, usable_cores
from rdqn.serve.handle import RunHandle
from rdqn.serve.registry import RunRegistry
from rdqn.training.evaluation import Evaluations
from rdqn.validation import shown


def _check_compare_options(args: argparse.Namespace) -> None:
    """The options of ``compare`` that are not config fields, before anything trains."""
    if not args.seeds or any(s < 0 for s in args.seeds):
        raise UsageError(f"--seeds must be non-negative integers, got {shown(args.seeds)}")
    for option, values in (("--seeds", args.seeds), ("--schemes", args.schemes)):
        if len(set(values)) != len(values):
            raise UsageError(f"{option} must not repeat a value, got {shown(values)}")
    if args.window < 1:
        raise UsageError(f"--window must be >= 1 episode, got {args.window}")
    if args.parallel is not None and args.parallel < 1:
        raise UsageError(f"--parallel must be >= 1, got {args.parallel}")
    if args.threshold is not None and not math.isfinite(args.threshold):
        raise UsageError(f"--threshold must be a finite number, got {args.threshold}")
    check_comparison_runs(len(args.seeds) * len(args.schemes))


@dataclass(frozen=True)
class Comparison:
    """A comparison, checked before anything is filed: its runs' configs and how to run them."""

    base: RunConfig
    configs: list[RunConfig]
    threshold: float | None
    report: Path
    executor: Executor
    parallel: int


def comparison(args: argparse.Namespace) -> Comparison:
    """The comparison ``rdqn compare`` would run, checked before the store opens."""
    base = config_from_args(args)
    _check_compare_options(args)
    report = Path(args.report)
    threshold = args.threshold if args.threshold is not None else comparison_threshold(base.env.id)
    configs = comparison_configs(base, args.schemes, args.seeds)
    executor = executor_from_env()
    if args.parallel is not None and executor.name != "ray":
        check_threads(args.parallel, setting="--parallel")
    parallel = args.parallel or (executor.capacity if executor.name == "ray" else usable_cores())
    return Comparison(base, configs, threshold, report, executor, parallel)


def cmd_compare(args: argparse.Namespace, store: RunStore, plan: Comparison) -> int:
    """``rdqn compare``: the exit status (0: every run finished and the report was written)."""
    base, configs, threshold, report_path = plan.base, plan.configs, plan.threshold, plan.report
    executor, parallel = plan.executor, plan.parallel
    check_writable(report_path, "--report")  # now, not after every run has trained
    group_id = uuid.uuid4().hex[:12]
    registry = RunRegistry(store, executor=executor, max_active=parallel, idle_timeout=None)
    # Ctrl-C (or SIGTERM) stops every run, queued ones too, as 'stopped' and resumable; the
    # workers ignore SIGINT (`rdqn.serve.zygote`), so this process tells them.
    with StopSignals() as signals:
        try:
            handles = registry.enqueue(configs, group_id=group_id)
            _watch(handles, configs, quiet=args.quiet, stop=signals.requested)
        except KeyboardInterrupt:
            registry.shutdown(INTERRUPTED_BY_USER)
            raise
        finally:
            if signals.reason is not None:
                registry.shutdown(signals.reason)
            else:
                registry.shutdown()
    if signals.exit_status is not None:
        ids = " ".join(handle.id for handle in handles)
        print(
            f"comparison (group {group_id}) {signals.reason}: its runs are stored as they "
            f"ended; `rdqn resume ID` goes on with a stopped one: {ids}",
            file=sys.stderr,
        )
        return signals.exit_status
    runs: dict[str, list[Curve]] = {scheme: [] for scheme in args.schemes}
    evaluations: dict[str, list[Evaluations]] = {scheme: [] for scheme in args.schemes}
    for handle, config in zip(handles, configs, strict=True):
        if handle.status != "finished":
            print(f"run {handle.id} {handle.status}: {handle.error}", file=sys.stderr)
        runs[config.replay.scheme].append(Curve.from_episodes(store.metrics.episodes(handle.id)))
        evaluations[config.replay.scheme].append(stored_evaluations(store, handle.id))
    table = summary_table(runs, threshold, args.window)
    print(shown_intervals(table).to_string(index=False, float_format=lambda v: f"{v:,.1f}"))
    heading = f"{base.env.id}: {', '.join(args.schemes)} ({base.preset}, seeds {args.seeds})"
    # The report is drawn by the figure layer, which needs plotly; the core does not.
    from rdqn.figures.report import comparison_report

    report = comparison_report(
        runs,
        table,
        heading=heading,
        total_steps=base.train.total_steps,
        threshold=threshold,
        window=args.window,
        configs=configs,
        evaluations=evaluations,
    )
    write_output(report_path, report, "--report", note=f" (the runs are stored, group {group_id})")
    print(f"report written to {report_path} (group {group_id})")
    failed = sum(handle.status != "finished" for handle in handles)
    return 0 if failed == 0 else 1


def _watch(
    handles: Sequence[RunHandle],
    configs: Sequence[RunConfig],
    *,
    quiet: bool,
    stop: Callable[[], str | None],
) -> None:
    """A progress bar per run, from its snapshots, until every run has ended or ``stop`` gives
    a reason."""
    bars = [
        Progress(
            config.train.total_steps,
            f"{config.replay.scheme:>12} s{config.seed}",
            enabled=not quiet,
            position=k,
        )
        for k, config in enumerate(configs)
    ]
    try:
        while True:
            ended = [handle.join(0) for handle in handles]
            for handle, bar in zip(handles, bars, strict=True):
                snapshot = handle.snapshot()
                if snapshot is not None:
                    bar.show(snapshot.env_steps, snapshot.episode_returns)
            if all(ended) or stop() is not None:
                return
            time.sleep(0.2)
    finally:
        for bar in bars:
            bar.close()
