"""The `e14-lesson` preset against a feed-forward learner of the same budget, and e14's speed.

Masked CartPole (`rdqn/MaskedCartPole-v0`) hides both velocities, so a learner that sees one
observation cannot tell which way the pole is falling; one that reads a window of observations can.
This script trains, for each seed:

  recurrent     the `e14-lesson` preset (two-LSTM net, windows of T = 4), its whole budget
  feed-forward  the same config with ``agent.network = "mlp"`` and ``replay.window = 1``: the
                64-64 MLP on the current observation only, same env, replay, batch, update
                rate, optimizer, target update and budget ("same budget, no memory")

and, in the same pool of workers, `e14` itself for its warm-up plus ``--e14-updates`` learner
updates, to compare steps per second (e14's whole 50,000-step budget is not run: at tens of
steps per second it takes most of an hour on one core).

Every job runs in its own worker process with one torch thread (as the run workers do). Both
wall-clock and process CPU seconds are recorded: on a shared machine the wall clock counts the
time other processes held the core, CPU seconds do not (on an idle core the two agree). Steps per
second are given over the whole run and over the learning phase (after the warm-up), where the
per-step cost is that of an update; the e14 ratio compares learning phases.

Usage (about 22 CPU minutes in all, so 11 minutes on two idle cores; two workers; ``--table``
prints the docs' table of a results file, `rdqn.experiments.tables.e14_lesson_table`):
    python -m benchmarks.recurrent_lesson --out benchmarks/results/recurrent_lesson.json
    python -m benchmarks.recurrent_lesson --table --out benchmarks/results/recurrent_lesson.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.provenance import git_commit
from rdqn.presets import FEED_FORWARD_LESSON

SEEDS = (0, 1, 2, 3, 4)
FINAL_EPISODES = 20


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def best_mean(returns: list[float], window: int = FINAL_EPISODES) -> float:
    """The highest mean return of ``window`` consecutive episodes (nan for fewer episodes)."""
    if len(returns) < window:
        return float("nan")
    means = np.convolve(returns, np.ones(window) / window, mode="valid")
    return float(means.max())


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Train one config for ``job["steps"]`` env steps (default: its budget) and time it."""
    import torch

    from rdqn.presets import configure
    from rdqn.training.trainer import Trainer

    torch.set_num_threads(1)
    config = configure(job["preset"], {**job["overrides"], "seed": job["seed"]})
    wall0, cpu0 = _clocks()
    trainer = Trainer(config)
    wall1, cpu1 = _clocks()
    steps = job.get("steps") or config.train.total_steps
    warm_up = config.train.learning_starts
    learning_start: tuple[float, float] | None = None
    while trainer.env_steps < steps:
        trainer.step()
        if trainer.env_steps == warm_up:
            learning_start = _clocks()
    wall2, cpu2 = _clocks()
    assert learning_start is not None
    learning_steps = trainer.env_steps - warm_up
    returns = [float(r) for r in trainer.recorder.episode_returns]
    return {
        "label": job["label"],
        "preset": job["preset"],
        "overrides": job["overrides"],
        "seed": job["seed"],
        "network": config.agent.network,
        "window": config.replay.window,
        "env_steps": trainer.env_steps,
        "updates": trainer.updates,
        "episodes": len(returns),
        "init_seconds": wall1 - wall0,
        "wall_seconds": wall2 - wall0,
        "cpu_seconds": cpu2 - cpu0,
        "env_steps_per_second": trainer.env_steps / (wall2 - wall1),
        "env_steps_per_cpu_second": trainer.env_steps / (cpu2 - cpu1),
        "learning_steps_per_second": learning_steps / (wall2 - learning_start[0]),
        "learning_steps_per_cpu_second": learning_steps / (cpu2 - learning_start[1]),
        "final_mean20": float(np.mean(returns[-FINAL_EPISODES:])) if returns else float("nan"),
        "best_mean20": best_mean(returns),
        "returns": returns,
        "episode_end_steps": [int(s) for s in trainer.recorder.episode_end_steps],
    }


def jobs(seeds: tuple[int, ...], e14_updates: int, steps: int | None) -> list[dict[str, Any]]:
    from rdqn.presets import preset

    # e14 first: its few hundred updates are the slowest job, so the pool starts it at once.
    e14 = preset("e14").train
    out: list[dict[str, Any]] = [
        {
            "label": "e14 (speed)",
            "preset": "e14",
            "overrides": {},
            "seed": 0,
            "steps": e14.learning_starts + e14_updates * e14.train_every,
        }
    ]
    for seed in seeds:
        for label, overrides in (("recurrent", {}), ("feed-forward", FEED_FORWARD_LESSON)):
            job = {"label": label, "preset": "e14-lesson", "overrides": overrides, "seed": seed}
            out.append({**job, "steps": steps})
    return out


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    def median(label: str, key: str) -> float:
        return statistics.median(r[key] for r in results if r["label"] == label)

    (e14,) = (r for r in results if r["label"] == "e14 (speed)")
    summary: dict[str, Any] = {}
    for label in ("recurrent", "feed-forward"):
        summary[label] = {
            key: median(label, key)
            for key in (
                "final_mean20",
                "best_mean20",
                "wall_seconds",
                "cpu_seconds",
                "env_steps_per_second",
                "env_steps_per_cpu_second",
                "learning_steps_per_second",
                "learning_steps_per_cpu_second",
            )
        }
        by_seed = sorted((r for r in results if r["label"] == label), key=lambda r: r["seed"])
        for key in ("final_mean20", "best_mean20"):
            summary[label][f"{key}_by_seed"] = [r[key] for r in by_seed]
    from rdqn.presets import preset

    e14_budget = preset("e14").train
    lesson_speed = summary["recurrent"]["learning_steps_per_cpu_second"]
    summary["e14"] = {
        "learning_steps_per_second": e14["learning_steps_per_second"],
        "learning_steps_per_cpu_second": e14["learning_steps_per_cpu_second"],
        "estimated_budget_cpu_minutes": (
            (e14_budget.total_steps - e14_budget.learning_starts)
            / e14["learning_steps_per_cpu_second"]
            / 60
        ),
    }
    summary["lesson_over_e14_learning_speed"] = lesson_speed / e14["learning_steps_per_cpu_second"]
    summary["lesson_over_e14_learning_speed_wall"] = (
        summary["recurrent"]["learning_steps_per_second"] / e14["learning_steps_per_second"]
    )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--e14-updates", type=int, default=300, help="e14 updates to time")
    parser.add_argument("--steps", type=int, help="env steps per lesson run (default: its budget)")
    parser.add_argument("--out", default="benchmarks/results/recurrent_lesson.json")
    parser.add_argument("--table", action="store_true", help="print the table of --out; no run")
    parser.add_argument(
        "--resummarize",
        action="store_true",
        help="recompute the summary of the runs already in --out (no training)",
    )
    args = parser.parse_args()
    if args.table:
        from rdqn.experiments.tables import e14_lesson_table

        print(e14_lesson_table(json.loads(Path(args.out).read_text(encoding="utf-8"))), end="")
        return
    if args.resummarize:
        out = Path(args.out)
        report = json.loads(out.read_text(encoding="utf-8"))
        for run in report["runs"]:
            run["best_mean20"] = best_mean(run["returns"])
        report["summary"] = summarize(report["runs"])
        out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        print(json.dumps(report["summary"], indent=1))
        return

    import gymnasium
    import torch

    from rdqn.presets import preset

    started = time.time()
    load_before = os.getloadavg()
    results = []
    todo = jobs(tuple(args.seeds), args.e14_updates, args.steps)
    with mp.get_context("spawn").Pool(args.workers) as pool:
        for result in pool.imap_unordered(run_job, todo):
            results.append(result)
            print(
                f"{result['label']:>13} seed {result['seed']}: final mean20 "
                f"{result['final_mean20']:6.1f}, {result['env_steps']:,} steps, "
                f"{result['cpu_seconds']:6.1f} CPU s, {result['wall_seconds']:6.1f} wall s",
                flush=True,
            )
    summary = summarize(results)
    report = {
        "what": __doc__.split("\n")[0],
        "commit": git_commit(),
        "lesson_config": preset("e14-lesson").to_dict(),
        "feed_forward_overrides": FEED_FORWARD_LESSON,
        "seeds": args.seeds,
        "workers": args.workers,
        "machine": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "numpy": np.__version__,
            "gymnasium": gymnasium.__version__,
            "cpus": os.cpu_count(),
            "torch_threads_per_job": 1,
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        },
        "total_wall_seconds": time.time() - started,
        "summary": summary,
        "runs": sorted(results, key=lambda r: (r["label"], r["seed"])),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
