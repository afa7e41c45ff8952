"""Running one study of ``rdqn experiment``: its trials through `rdqn.sweeps.map_tasks`, the
results file rewritten after each (``--resume`` goes on with it), or a results file read."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rdqn.cli.experiment_resume import config_digest, resumed_trials, trial_fields
from rdqn.cli.options import write_output
from rdqn.cli.usage import UsageError

__all__ = ["command_line", "read_results", "read_text", "run_trials"]


def run_trials(
    func: Callable[[Any], dict[str, Any]],
    trials: list[Any],
    head: dict[str, Any],
    summarize: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    out: Path,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Every trial through `map_tasks` (with ``--resume``, every trial the results file does not
    hold as finished); the results file rewritten after each one."""
    from rdqn.sweeps import map_tasks

    started = time.time()
    head = {**head, "machine": _machine(), "workers": args.workers, "ray": args.ray}
    results: list[dict[str, Any]] = []
    earlier = 0.0
    if args.resume:
        results, earlier, trials = resumed_trials(out, head, trials, args.quiet)
    failed: list[dict[str, Any]] = []
    outcomes = (
        map_tasks(
            func,
            trials,
            workers=args.workers,
            ray=args.ray,
            progress=None if args.quiet else head["experiment"],
        )
        if trials
        else iter(())
    )
    try:
        for trial, outcome in outcomes:
            if isinstance(outcome, BaseException):
                fields = trial_fields(trial)
                failed.append({**fields, "error": f"{type(outcome).__name__}: {outcome}"})
                print(f"rdqn: trial {fields} failed: {outcome}", file=sys.stderr)
            else:
                results.append({**outcome, "config_digest": config_digest(trial)})
            seconds = earlier + time.time() - started
            report = _report(head, results, failed, summarize, seconds)
            write_output(out, json.dumps(report, indent=1) + "\n", "--out")
    except KeyboardInterrupt:
        print(
            f"rdqn: interrupted; {out} holds the {len(results)} finished trials "
            "(--resume goes on with them)",
            file=sys.stderr,
        )
        raise SystemExit(130) from None
    report = _report(head, results, failed, summarize, earlier + time.time() - started)
    if not trials:  # all finished before: the file rewritten once, with this run's head
        write_output(out, json.dumps(report, indent=1) + "\n", "--out")
    if not args.quiet:
        print(f"results: {out} ({len(results)} trials, {len(failed)} failed)", file=sys.stderr)
    return report


def _report(
    head: dict[str, Any],
    results: list[dict[str, Any]],
    failed: list[dict[str, Any]],
    summarize: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    seconds: float,
) -> dict[str, Any]:
    ordered = sorted(
        results,
        key=lambda r: (
            str(r.get("game")),
            str(r.get("scheme")),
            str(r.get("arm")),
            r.get("n", 0),
            r["seed"],
        ),
    )
    return {
        **head,
        "wall_seconds": seconds,
        "summary": summarize(ordered) if ordered else [],
        "failed": failed,
        "trials": ordered,
    }


def read_results(path: Path) -> dict[str, Any]:
    try:
        report = json.loads(read_text(path, "--from"))
    except ValueError as err:  # not UTF-8 either
        raise UsageError(f"--from {path} is not JSON: {err}") from None
    if not isinstance(report, dict) or "summary" not in report:
        raise UsageError(f"--from {path} is not a results file of `rdqn experiment`")
    return report


def _machine() -> dict[str, Any]:
    import numpy
    import torch

    return {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "load_average_at_start": list(os.getloadavg()),
    }


def command_line() -> str:
    return "python -m rdqn " + " ".join(sys.argv[1:]) if sys.argv[1:] else "python -m rdqn"


def read_text(path: Path, option: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as err:
        raise UsageError(f"{option} {path} cannot be read: {err.strerror or err}") from None
