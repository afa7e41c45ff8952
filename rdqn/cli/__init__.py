"""Command line: `python -m rdqn train | resume | compare | runs | presets | warm-up`.

    python -m rdqn train --preset e14 --env rdqn/MaskedCartPole-v0 --steps 20000 --seed 0 \\
        --set replay.alpha=0.7
    python -m rdqn resume RUN_ID     # a stopped run, from where it stopped, to its budget
    python -m rdqn compare --preset per-notebook --steps 30000 --seeds 0 1 2
    python -m rdqn runs list | show ID | export ID [--kind steps] [--out FILE] | delete ID
    python -m rdqn warm-up           # compile the kernels once, at install (numba's disk cache)

Every run is written to the run store ($RDQN_HOME or ./.rdqn, or --home). Bad arguments print one
line naming the argument and its value and exit with status 2, before any run is filed: configs
and options are checked before the store is opened, against the server's limits too
(`rdqn.limits`, RDQN_LIMIT_* variables), and the env is built once to check its options and its
prices CSV. Output files (--out, --report) are checked for writing before the work that fills
them. This module is the one place in `rdqn` that prints.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from tqdm import tqdm

from rdqn.compare import (
    ROLLING_WINDOW,
    Curve,
    comparison_configs,
    comparison_threshold,
    summary_table,
)
from rdqn.config import SCHEMES, RunConfig, field_docs
from rdqn.envs import ENV_IDS, make_env
from rdqn.limits import check_comparison_runs, check_limits, check_threads
from rdqn.presets import PRESETS, configure, preset
from rdqn.runs.executors import Executor, ExecutorUnavailable, executor_from_env, usable_cores
from rdqn.runs.handle import RunHandle
from rdqn.runs.lifecycle import INTERRUPTED_BY_USER, RecordedRun, run_to_end
from rdqn.runs.registry import RunRegistry
from rdqn.runs.resume import prepare_resume, resume_blocker
from rdqn.runs.store import RunStore, StoreError
from rdqn.runs.worker import WARM_UP_PARTS, WarmUp, kernel_cache_dirs, kernels_cached, warm_up
from rdqn.training.trainer import Trainer
from rdqn.validation import shown

__all__ = ["main"]


class UsageError(Exception):
    """A bad argument: reported as one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _set_help() -> str:
    docs = field_docs()
    lines = ["config fields for --set KEY=VALUE (VALUE is JSON; bare words are strings):"]
    lines += [f"  {key:28s} {doc}" for key, doc in docs.items() if key not in ("preset", "seed")]
    return "\n".join(lines)


def _parse_set(items: Sequence[str]) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set expects KEY=VALUE, got {shown(item)}")
        if key == "preset":
            raise UsageError(f"--set preset={shown(raw)}: choose the preset with --preset NAME")
        try:
            overrides[key] = json.loads(raw)
        except ValueError:  # not JSON (a bare word), or a number of more than 4,300 digits
            overrides[key] = raw
    return overrides


def _config_from_args(args: argparse.Namespace) -> RunConfig:
    overrides: dict[str, Any] = {}
    if args.env is not None:
        overrides["env.id"] = args.env
    if args.steps is not None:
        overrides["train.total_steps"] = args.steps
    if getattr(args, "scheme", None) is not None:
        overrides["replay.scheme"] = args.scheme
    overrides.update(_parse_set(args.set or []))
    config = configure(args.preset, overrides)
    # Before any run is filed or anything allocated: the server's limits, then the env itself
    # (its options, a prices CSV), which is cheap to build once sizes are within the limits.
    check_limits(config)
    make_env(config.env.id, **config.env.kwargs).close()
    return config


def _add_run_parser(sub: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    """A command that trains: the run options, and every config field in its --help."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help_text,
        epilog=_set_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_run_options(parser)
    return parser


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", default="per-notebook", choices=list(PRESETS))
    parser.add_argument("--env", choices=list(ENV_IDS), help="environment (default: the preset's)")
    parser.add_argument(
        "--steps",
        type=int,
        help="environment steps (default: the preset's); warm-up is capped at a tenth of it",
    )
    parser.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a config field; repeatable"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def build_parser(prog: str = "rdqn") -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        description="Prioritized experience replay for deep Q-learning.",
    )
    parser.add_argument("--home", help="run store folder (default: $RDQN_HOME or ./.rdqn)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    train = _add_run_parser(sub, "train", "train one run")
    train.add_argument("--seed", type=int, default=None, help="run seed (default: the preset's)")
    train.add_argument("--scheme", choices=SCHEMES, help="replay scheme (default: the preset's)")
    train.add_argument("--name", help="a name for the run")

    resume = sub.add_parser(
        "resume",
        help="resume a stopped run under its id, from where it stopped, to its budget",
        description="Resume a stopped run (stopped by its owner, for idleness, by a server that "
        "shut down, or by Ctrl-C) under the same id: weights, optimizer, replay memory and "
        "random streams as they were, continuing at the next episode boundary.",
    )
    resume.add_argument("run_id")
    resume.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    resume.add_argument("--quiet", action="store_true", help="no progress bar")

    compare = _add_run_parser(
        sub, "compare", "uniform vs proportional vs rank-based on the same env and seeds"
    )
    compare.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    compare.add_argument("--schemes", nargs="+", choices=SCHEMES, default=list(SCHEMES))
    compare.add_argument(
        "--threshold",
        type=float,
        help="return threshold (default: the env's, 0.8 where the goal pays 1)",
    )
    compare.add_argument(
        "--window", type=int, default=ROLLING_WINDOW, help="episodes in the rolling mean"
    )
    compare.add_argument("--report", default="compare-report.html", help="HTML report path")
    compare.add_argument(
        "--parallel",
        type=int,
        help="runs training at once, one worker process each (default: one per core; "
        "RDQN_EXECUTOR=ray spreads them over a Ray cluster)",
    )

    runs = sub.add_parser("runs", help="list, show, export or delete stored runs")
    runs_sub = runs.add_subparsers(dest="action", required=True, parser_class=_Parser)
    runs_sub.add_parser("list", help="list stored runs")
    show = runs_sub.add_parser("show", help="config, manifest and results of one run")
    show.add_argument("run_id")
    export = runs_sub.add_parser("export", help="metrics of one run as CSV")
    export.add_argument("run_id")
    export.add_argument("--kind", choices=["episodes", "steps"], default="episodes")
    export.add_argument("--out", help="file to write (default: standard output)")
    delete = runs_sub.add_parser("delete", help="delete a run and its checkpoint")
    delete.add_argument("run_id")

    sub.add_parser("presets", help="list the presets")
    warm = sub.add_parser(
        "warm-up",
        help="compile every kernel into numba's on-disk cache (once, at install)",
        description="Compile the numba kernels (fused MLP update, sum tree, samplers, window "
        "gather) into numba's on-disk cache, so no server or run compiles them later: "
        "pip install -r requirements.txt && python -m rdqn warm-up. Run it as the user that "
        "runs the server (numba falls back to a per-user folder where the sources are not "
        "writable). Seconds when the cache is already warm.",
    )
    warm.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


@functools.cache
def _parser(prog: str) -> argparse.ArgumentParser:
    """One parser per program name: building one costs more than most refusals (parsing leaves
    it unchanged)."""
    return build_parser(prog)


# ------------------------------------------------------------------------------- progress
class Progress:
    """A tqdm bar on stderr: env steps, steps per second and the recent mean return."""

    def __init__(self, total: int, label: str, enabled: bool, position: int | None = None) -> None:
        self.bar = tqdm(
            total=total,
            desc=label,
            unit="step",
            unit_scale=False,
            disable=not enabled,
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=0.2,
            position=position,
        )

    def show(self, env_steps: int, returns: Sequence[float]) -> None:
        recent = returns[-ROLLING_WINDOW:]
        if len(recent):
            self.bar.set_postfix_str(f"return {np.mean(recent):.1f}", refresh=False)
        self.bar.update(env_steps - self.bar.n)

    def __call__(self, trainer: Trainer) -> None:
        self.show(trainer.env_steps, trainer.recorder.episode_returns)

    def close(self) -> None:
        self.bar.close()


# -------------------------------------------------------------------------------- commands
def train_one(
    config: RunConfig,
    store: RunStore,
    *,
    name: str | None = None,
    group_id: str | None = None,
    quiet: bool = False,
    label: str = "train",
) -> RecordedRun:
    """Train one config to its budget through the run lifecycle, with a progress bar."""
    return _train_to_end(RecordedRun(config, store, name=name, group_id=group_id), quiet, label)


def _train_to_end(run: RecordedRun, quiet: bool, label: str) -> RecordedRun:
    bar = Progress(run.config.train.total_steps, label, enabled=not quiet)
    try:
        run_to_end(run, progress=bar)
        if run.trainer is not None:
            bar(run.trainer)
    finally:
        bar.close()
    if run.status == "failed":
        print(f"run {run.id} failed: {run.error}", file=sys.stderr)
    return run


def _report(run: RecordedRun) -> int:
    """Print how the run ended; the exit status (0: finished)."""
    trainer = run.trainer
    assert trainer is not None  # run_to_end raises when no trainer could be built
    returns = trainer.recorder.episode_returns
    final = np.mean(returns[-ROLLING_WINDOW:]) if returns else float("nan")
    print(
        f"run {run.id}: {run.status}, {trainer.env_steps:,} env steps, "
        f"{trainer.updates:,} updates, {trainer.episodes:,} episodes, "
        f"mean return of the last {ROLLING_WINDOW} episodes {final:.1f}"
    )
    return 0 if run.status == "finished" else 1


NAME_MAX = 200
"""Characters in a run's ``--name``."""


def _check_name(name: str | None) -> None:
    if name is not None and (len(name) > NAME_MAX or not name.isprintable()):
        raise UsageError(
            f"--name must be at most {NAME_MAX} printable characters (no newlines or control "
            f"characters), got {shown(name)}"
        )


def _train_config(args: argparse.Namespace) -> RunConfig:
    _check_name(args.name)
    config = _config_from_args(args)
    if args.seed is not None:
        config = config.with_overrides({"seed": args.seed})
    return config


def _cmd_train(args: argparse.Namespace, store: RunStore, config: RunConfig) -> int:
    return _report(train_one(config, store, name=args.name, quiet=args.quiet))


def _cmd_resume(args: argparse.Namespace, store: RunStore) -> int:
    # A run whose process died is still 'running' or 'paused' in the store: mark it stopped.
    store.mark_interrupted()
    point = prepare_resume(store, args.run_id)
    run = RecordedRun(point.config, store, run_id=point.run_id, resume_from=point.checkpoint)
    return _report(_train_to_end(run, args.quiet, "resume"))


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


def _check_writable(path: Path, option: str) -> None:
    """Refuse an output file that cannot be written, before any work: its folder is created
    (as the writer would) and the file opened for appending, then removed if it was new."""
    if path.is_dir():
        raise UsageError(f"{option} {path} is a directory; name a file to write")
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as err:
        raise UsageError(f"{option} {path} cannot be written: {err.strerror or err}") from None
    if not existed:
        path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Comparison:
    """A comparison, checked before anything is filed: its runs' configs and how to run them."""

    base: RunConfig
    configs: list[RunConfig]
    threshold: float | None
    report: Path
    executor: Executor
    parallel: int


def _comparison(args: argparse.Namespace) -> Comparison:
    base = _config_from_args(args)
    _check_compare_options(args)
    report = Path(args.report)
    threshold = args.threshold if args.threshold is not None else comparison_threshold(base.env.id)
    configs = comparison_configs(base, args.schemes, args.seeds)
    executor = executor_from_env()
    if args.parallel is not None and executor.name != "ray":
        check_threads(args.parallel, setting="--parallel")
    parallel = args.parallel or (executor.capacity if executor.name == "ray" else usable_cores())
    return Comparison(base, configs, threshold, report, executor, parallel)


def _cmd_compare(args: argparse.Namespace, store: RunStore, plan: Comparison) -> int:
    base, configs, threshold, report_path = plan.base, plan.configs, plan.threshold, plan.report
    executor, parallel = plan.executor, plan.parallel
    _check_writable(report_path, "--report")  # now, not after every run has trained
    group_id = uuid.uuid4().hex[:12]
    registry = RunRegistry(store, executor=executor, max_active=parallel, idle_timeout=None)
    try:
        handles = registry.enqueue(configs, group_id=group_id)
        _watch(handles, configs, quiet=args.quiet)
    except KeyboardInterrupt:
        registry.shutdown(INTERRUPTED_BY_USER)
        raise
    finally:
        registry.shutdown()
    runs: dict[str, list[Curve]] = {scheme: [] for scheme in args.schemes}
    for handle, config in zip(handles, configs, strict=True):
        if handle.status != "finished":
            print(f"run {handle.id} {handle.status}: {handle.error}", file=sys.stderr)
        runs[config.replay.scheme].append(Curve.from_episodes(store.episodes(handle.id)))
    table = summary_table(runs, threshold, args.window)
    print(table.to_string(index=False, float_format=lambda v: f"{v:,.1f}"))
    heading = f"{base.env.id}: {', '.join(args.schemes)} ({base.preset}, seeds {args.seeds})"
    # The report is drawn by the figure layer, which needs plotly; the core does not.
    from dashboard.figures.report import comparison_report, write_comparison_report

    report = comparison_report(
        runs,
        table,
        heading=heading,
        total_steps=base.train.total_steps,
        threshold=threshold,
        window=args.window,
        configs=configs,
    )
    try:
        path = write_comparison_report(report_path, report)
    except OSError as err:
        raise UsageError(
            f"--report {report_path} cannot be written: {err.strerror or err} (the runs are "
            f"stored, group {group_id})"
        ) from None
    print(f"report written to {path} (group {group_id})")
    failed = sum(handle.status != "finished" for handle in handles)
    return 0 if failed == 0 else 1


def _watch(handles: Sequence[RunHandle], configs: Sequence[RunConfig], *, quiet: bool) -> None:
    """A progress bar per run, from its snapshots, until every run has ended."""
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
            if all(ended):
                return
            time.sleep(0.2)
    finally:
        for bar in bars:
            bar.close()


def _cmd_runs(args: argparse.Namespace, store: RunStore) -> int:
    if args.action == "list":
        frame = store.list_runs()
        if frame.empty:
            print("no runs stored yet")
            return 0
        columns = ["id", "status", "preset", "env_id", "scheme", "seed", "env_steps", "episodes"]
        print(frame[[c for c in columns if c in frame]].to_string(index=False))
        return 0
    try:
        record = store.get_run(args.run_id)
    except KeyError as err:
        raise UsageError(str(err).strip("'\"")) from err
    if args.action == "show":
        episodes = store.episodes(args.run_id)
        blocker = resume_blocker(store, args.run_id)
        summary = {
            "id": record.id,
            "status": record.status,
            "error": record.error,
            "env_steps": record.env_steps,
            "updates": record.updates,
            "episodes": record.episodes,
            f"mean return (last {ROLLING_WINDOW})": float(
                episodes["return"].tail(ROLLING_WINDOW).mean()
            )
            if len(episodes)
            else None,
            "checkpoint": record.checkpoint_path,
            "resumable": blocker is None,
            "not resumable because": blocker,
            "config": record.config,
            "manifest": record.manifest,
        }
        print(json.dumps(summary, indent=2, default=str))
    elif args.action == "export":
        if args.out:
            _check_writable(Path(args.out), "--out")
        text = store.export_csv(args.run_id, args.kind)
        if args.out:
            try:
                Path(args.out).write_text(text, encoding="utf-8")
            except OSError as err:
                raise UsageError(
                    f"--out {args.out} cannot be written: {err.strerror or err}"
                ) from None
            print(f"wrote {args.out}")
        else:
            sys.stdout.write(text)
    elif args.action == "delete":
        store.delete_run(args.run_id)
        print(f"deleted run {args.run_id}")
    return 0


def _cmd_presets() -> int:
    for name in PRESETS:
        c = preset(name)
        print(
            f"{name:13s} net={c.agent.network:9s} replay={c.replay.scheme:12s} "
            f"target={c.agent.target_update:4s} env={c.env.id} capacity={c.replay.capacity:,} "
            f"batch={c.replay.batch_size} window={c.replay.window}"
        )
    return 0


def _cmd_warm_up(args: argparse.Namespace) -> int:
    bar = tqdm(
        total=len(WARM_UP_PARTS),
        desc="warm-up",
        unit="part",
        disable=args.quiet,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    heard: list[WarmUp] = []

    def show(progress: WarmUp) -> None:
        heard.append(progress)
        verb = "compiling" if progress.compiling else "loading"
        label = f"{verb} {progress.part}" if progress.part else "kernels ready"
        bar.set_description_str(label, refresh=False)
        bar.update(progress.done - bar.n)

    start = time.monotonic()
    try:
        warm_up(show)
    finally:
        bar.close()
    seconds = time.monotonic() - start
    where = ", ".join(kernel_cache_dirs())
    if not kernels_cached():
        print(f"rdqn: error: numba did not keep the compiled kernels in {where}", file=sys.stderr)
        return 1
    done = "compiled into" if heard and heard[0].compiling else "already in"
    print(f"kernels {done} numba's cache in {seconds:.1f} s: {where}")
    return 0


def main(argv: Sequence[str] | None = None, *, prog: str = "rdqn") -> int:
    """Entry point of the ``rdqn`` command (and of ``python -m rdqn``); returns the exit status."""
    parser = _parser(prog)
    try:
        args = parser.parse_args(argv)
        if args.command == "presets":
            return _cmd_presets()
        if args.command == "warm-up":
            return _cmd_warm_up(args)
        if getattr(args, "threads", 1) < 1:
            raise UsageError(f"--threads must be >= 1, got {args.threads}")
        if hasattr(args, "threads"):
            check_threads(args.threads)
            import torch

            torch.set_num_threads(args.threads)
        # Bad arguments are refused before the store is opened, let alone a run filed.
        config = _train_config(args) if args.command == "train" else None
        comparison = _comparison(args) if args.command == "compare" else None
        store = RunStore(Path(args.home) / "rdqn.db" if args.home else None)
        try:
            if config is not None:
                return _cmd_train(args, store, config)
            if comparison is not None:
                return _cmd_compare(args, store, comparison)
            if args.command == "resume":
                return _cmd_resume(args, store)
            return _cmd_runs(args, store)
        finally:
            store.close()
    except (UsageError, ValueError, ExecutorUnavailable, StoreError) as err:
        print(f"rdqn: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rdqn: interrupted; the run is saved as 'stopped'", file=sys.stderr)
        return 130
