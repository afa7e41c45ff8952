"""The Compare page's default comparison (`chain-lesson`): does prioritization visibly win, and
how long does the page take to show it?

Two measurements:

  curves     every scheme (uniform, proportional, rank-based) on seeds 0-9 of the `chain-lesson`
             preset, built exactly as the page builds them (`rdqn.compare.comparison_configs`),
             each trained to its whole budget in a worker process with one torch thread; also
             the same with the importance-sampling correction switched on (beta0 0.4 annealed
             to 1), to show what it costs a tabular learner, once per IS-weight normalisation
             (`replay.is_normalization`: "global", the paper's and the default, divides every
             weight by the largest any stored item could get; "batch" by the batch's largest;
             "none" leaves (N P(i))^-beta as it is). Per run: env steps until the mean return
             of the last 20 episodes first reaches the page's threshold (0.8: the goal in four
             episodes out of five), the final 20-episode mean, wall and CPU seconds.
  dashboard  the page's default comparison (three seeds per scheme, nine runs) through the run
             registry with the page's executor and run cap (worker processes; the cores but one,
             so one run at a time on two cores), timed from the click to every run finished, and
             to the end of the first lap (every scheme's seed 0).

On a shared machine the wall clock counts time other processes held the cores, CPU seconds do
not; both are recorded, with the load average at the start and at the end of the curves.

The JSON holds every run's curve; a short Markdown summary is written beside it (same name,
``.md``).

Usage (about 5 CPU minutes for the 120 curves, 1-2 minutes of wall time for the dashboard timing;
``--keep-dashboard`` measures the curves only and keeps the dashboard timing of the --out file
as it is, with where it came from; ``--table`` prints the docs' table of a results file,
`rdqn.experiments.tables`):
    python -m benchmarks.compare_default --out benchmarks/results/compare_default.json
    python -m benchmarks.compare_default --keep-dashboard \
        --out benchmarks/results/compare_default.json
    python -m benchmarks.compare_default --table --out benchmarks/results/compare_default.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.provenance import git_commit

PRESET = "chain-lesson"
SEEDS = tuple(range(10))
PAGE_SEEDS = (0, 1, 2)
WINDOW = 20
IS_CORRECTION = {"replay.beta0": 0.4, "replay.beta_end": 1.0}
VARIANTS: dict[str, dict[str, Any]] = {
    "chain-lesson (no IS correction, beta 0)": {},
    "with IS correction (beta0 0.4 -> 1), global normalisation": {
        **IS_CORRECTION,
        "replay.is_normalization": "global",
    },
    "with IS correction (beta0 0.4 -> 1), batch normalisation": {
        **IS_CORRECTION,
        "replay.is_normalization": "batch",
    },
    "with IS correction (beta0 0.4 -> 1), no normalisation": {
        **IS_CORRECTION,
        "replay.is_normalization": "none",
    },
}


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Train one config to its budget; its threshold statistics and timings."""
    import torch

    from rdqn.compare import Curve, episodes_to_threshold
    from rdqn.config import RunConfig
    from rdqn.training.trainer import Trainer

    torch.set_num_threads(1)
    config = RunConfig.from_dict(job["config"])
    wall, cpu = time.perf_counter(), time.process_time()
    trainer = Trainer(config)
    trainer.run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    returns = [float(r) for r in trainer.recorder.episode_returns]
    end_steps = [int(s) for s in trainer.recorder.episode_end_steps]
    curve = Curve(np.array(end_steps, dtype=np.int64), np.array(returns, dtype=np.float64))
    episodes, steps = episodes_to_threshold(curve, job["threshold"], WINDOW)
    return {
        **{k: v for k, v in job.items() if k != "config"},
        "alpha": config.replay.alpha,
        "beta0": config.replay.beta0,
        "beta_end": config.replay.beta_end,
        "is_normalization": config.replay.is_normalization,
        "steps_to_threshold": steps,
        "episodes_to_threshold": episodes,
        "final_mean20": float(np.mean(returns[-WINDOW:])) if returns else float("nan"),
        "episodes": len(returns),
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "returns": returns,
        "end_steps": end_steps,
    }


def curve_jobs(seeds: tuple[int, ...]) -> list[dict[str, Any]]:
    from rdqn.compare import comparison_configs, comparison_threshold
    from rdqn.config import SCHEMES
    from rdqn.presets import configure

    jobs = []
    for variant, overrides in VARIANTS.items():
        base = configure(PRESET, overrides)
        threshold = comparison_threshold(base.env.id)
        for config in comparison_configs(base, SCHEMES, seeds):
            jobs.append(
                {
                    "variant": variant,
                    "scheme": config.replay.scheme,
                    "seed": config.seed,
                    "threshold": threshold,
                    "config": config.to_dict(),
                }
            )
    return jobs


def summarize(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per variant and scheme: seeds that reached the threshold, the median env steps to it
    (over those), the steps per seed (None: not within the budget), the median final mean."""
    rows = []
    for variant in VARIANTS:
        for scheme in ("uniform", "proportional", "rank"):
            runs = sorted(
                (r for r in results if r["variant"] == variant and r["scheme"] == scheme),
                key=lambda r: r["seed"],
            )
            if not runs:
                continue
            reached = [r["steps_to_threshold"] for r in runs if r["steps_to_threshold"] is not None]
            rows.append(
                {
                    "variant": variant,
                    "scheme": scheme,
                    "alpha": runs[0]["alpha"],
                    "beta0": runs[0]["beta0"],
                    "is_normalization": runs[0]["is_normalization"],
                    "seeds": [r["seed"] for r in runs],
                    "reached": f"{len(reached)}/{len(runs)}",
                    "median_steps_to_threshold": statistics.median(reached) if reached else None,
                    "steps_to_threshold": [r["steps_to_threshold"] for r in runs],
                    "median_final_mean20": statistics.median(r["final_mean20"] for r in runs),
                    "median_cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
                }
            )
    return rows


def dashboard_timing(seeds: tuple[int, ...]) -> dict[str, Any]:
    """The page's default comparison through the registry, as the page queues it."""
    from rdqn.compare import comparison_configs
    from rdqn.config import SCHEMES
    from rdqn.presets import preset
    from rdqn.runs.store import RunStore
    from rdqn.serve.executors import executor_from_env
    from rdqn.serve.registry import RunRegistry

    configs = comparison_configs(preset(PRESET), SCHEMES, seeds)
    with tempfile.TemporaryDirectory() as home:
        store = RunStore(Path(home) / "rdqn.db")
        executor = executor_from_env()
        registry = RunRegistry(store, executor=executor, idle_timeout=None)
        executor.prepare()
        try:
            started = time.perf_counter()
            handles = registry.enqueue(configs, group_id="bench")
            ended: dict[str, float] = {}
            while len(ended) < len(handles):
                for handle in handles:
                    handle.snapshot()
                    if handle.id not in ended and handle.join(0):
                        ended[handle.id] = time.perf_counter() - started
                time.sleep(0.05)
            statuses = [handle.status for handle in handles]
        finally:
            registry.shutdown()
    first_lap = max(
        ended[h.id] for h, c in zip(handles, configs, strict=True) if c.seed == seeds[0]
    )
    return {
        "runs": len(configs),
        "max_active": registry.max_active,
        "executor": executor.name,
        "statuses": statuses,
        "seconds_to_first_lap": first_lap,
        "seconds_to_all_finished": max(ended.values()),
    }


def write_report(path: Path, report: dict[str, Any]) -> None:
    """JSON with the summary indented for reading and one line per run (its whole curve)."""
    parts = []
    for key, value in report.items():
        if key == "runs":
            lines = ",\n".join(f"  {json.dumps(run)}" for run in value)
            parts.append(f' "runs": [\n{lines}\n ]')
        else:
            nested = json.dumps(value, indent=1).replace("\n", "\n ")
            parts.append(f" {json.dumps(key)}: {nested}")
    path.write_text("{\n" + ",\n".join(parts) + "\n}\n")


def _loads(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def _steps(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def summary_markdown(report: dict[str, Any]) -> str:
    """The short results file: the table per variant and the dashboard timing."""
    machine = report["machine"]
    load = _loads(machine["load_average_at_start"])
    if "load_average_at_end" in machine:
        load += f", at the end {_loads(machine['load_average_at_end'])}"
    commit = f"; commit {report['commit']}" if report.get("commit") else ""
    lines = [
        f"# `{report['preset']}`: the Compare page's default comparison",
        "",
        f"Written by `python -m benchmarks.compare_default` on {machine['cores']} cores "
        f"(load average at the start {load}{commit}). Threshold: the mean return of 20 episodes "
        "reaches 0.8 (the goal in four episodes out of five); 'env steps' is where it first did, "
        "over the seeds that got there within the budget.",
    ]
    for variant in VARIANTS:
        rows = [row for row in report["summary"] if row["variant"] == variant]
        if not rows:
            continue
        seeds = rows[0]["seeds"]
        lines += [
            "",
            f"## {variant}, seeds {seeds[0]}-{seeds[-1]}",
            "",
            "| scheme | α | β₀ | reached | env steps, median | env steps per seed | CPU s |",
            "|---|---:|---:|---:|---:|---|---:|",
        ]
        for row in rows:
            per_seed = ", ".join(_steps(v) for v in row["steps_to_threshold"])
            uniform = row["scheme"] == "uniform"  # alpha and beta do not apply
            alpha, beta0 = ("-", "-") if uniform else (f"{row['alpha']:g}", f"{row['beta0']:g}")
            lines.append(
                f"| {row['scheme']} | {alpha} | {beta0} | {row['reached']} | "
                f"{_steps(row['median_steps_to_threshold'])} | {per_seed} | "
                f"{row['median_cpu_seconds']:.1f} |"
            )
    if "dashboard" in report:
        timing = report["dashboard"]
        lines += [
            "",
            "## The page's default, through the run registry",
            "",
            f"{timing['runs']} runs (seeds {PAGE_SEEDS[0]}-{PAGE_SEEDS[-1]} of every scheme), "
            f"{timing['max_active']} at a time in {timing['executor']} workers: every scheme's "
            f"first seed finished after {timing['seconds_to_first_lap']:.0f} s, all runs after "
            f"{timing['seconds_to_all_finished']:.0f} s.",
        ]
        kept = timing.get("kept_from")
        if kept:
            commit = f"commit {kept['commit']}" if kept.get("commit") else "commit not recorded"
            lines[-1] += (
                " (Not measured again with the curves above: kept from an earlier run, "
                f"{commit}, load average at its start {_loads(kept['load_average_at_start'])}.)"
            )
    return "\n".join(lines) + "\n"


def kept_dashboard(path: Path) -> dict[str, Any]:
    """The dashboard timing of the results file at ``path``, with the commit and load average
    of the run that measured it (``kept_from``; kept as it was if it was itself kept)."""
    earlier = json.loads(path.read_text(encoding="utf-8"))
    if "dashboard" not in earlier:
        raise SystemExit(f"--keep-dashboard: {path} has no dashboard timing to keep")
    timing = dict(earlier["dashboard"])
    timing.setdefault(
        "kept_from",
        {
            "commit": earlier.get("commit"),
            "load_average_at_start": earlier["machine"]["load_average_at_start"],
        },
    )
    return timing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", required=True)
    dashboard = parser.add_mutually_exclusive_group()
    dashboard.add_argument("--skip-dashboard", action="store_true", help="no dashboard timing")
    dashboard.add_argument(
        "--keep-dashboard",
        action="store_true",
        help="no dashboard timing: keep the one of the existing --out file (and its provenance)",
    )
    parser.add_argument("--table", action="store_true", help="print the table of --out; no run")
    args = parser.parse_args()
    if args.table:
        from rdqn.experiments.tables import chain_lesson_table

        print(chain_lesson_table(json.loads(Path(args.out).read_text(encoding="utf-8"))), end="")
        return
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    kept = kept_dashboard(out) if args.keep_dashboard else None
    report: dict[str, Any] = {
        "preset": PRESET,
        "commit": git_commit(),
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_start": os.getloadavg(),
        },
    }
    if kept is not None:
        report["dashboard"] = kept
    elif not args.skip_dashboard:
        report["dashboard"] = dashboard_timing(PAGE_SEEDS)
        print(report["dashboard"], flush=True)
    results = []
    with mp.get_context("spawn").Pool(args.workers) as pool:
        for result in pool.imap_unordered(run_job, curve_jobs(SEEDS)):
            results.append(result)
            keys = ("variant", "scheme", "seed", "steps_to_threshold", "final_mean20")
            print({k: result[k] for k in keys}, flush=True)
    results.sort(key=lambda r: (list(VARIANTS).index(r["variant"]), r["scheme"], r["seed"]))
    report["machine"]["load_average_at_end"] = os.getloadavg()
    report["summary"] = summarize(results)
    report["runs"] = results
    write_report(out, report)
    out.with_suffix(".md").write_text(summary_markdown(report), encoding="utf-8")
    for row in report["summary"]:
        print({k: v for k, v in row.items() if k != "seeds"})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
