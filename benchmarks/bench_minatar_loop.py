"""The MinAtar loop's speed against Stable-Baselines3's DQN at the same settings, on Breakout.

Both train DQN on MinAtar Breakout for the same env steps and seeds, one run at a time, one torch
thread each, the learners in turn for every seed (a change in the machine's load falls on all
alike): rdqn's `minatar` preset as it is (proportional PER, alpha .5, beta .5) and with uniform
replay, SB3's only replay (`benchmarks/peers/sb3_minatar.py` states SB3's side: the package's own
env, MinAtar's network as a features extractor, the same hyperparameters). Measured per run: env
steps per wall second and per CPU second of the process, from building the trainer or model to
the end; the ratio to SB3 seed by seed. Epsilon falls from 1 to .01 over the run's steps, so a
run acts greedily (a forward pass per step) about half the time, as the experiment's first
hundred thousand steps do. The greedy evaluations are off (SB3 has none in its loop).

SB3 has its own venv (`bash benchmarks/peers/setup_sb3.sh`: torch 2.13.0 CPU as here, SB3 2.9.2,
minatar 1.0.15).

Usage:
    python -m benchmarks.bench_minatar_loop --out benchmarks/results/minatar_loop.json
    python -m benchmarks.bench_minatar_loop --table benchmarks/results/minatar_loop.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
from pathlib import Path
from typing import Any

from benchmarks.bench_whole_loop import SB3_PYTHON, SETUP_HINT, run_peer
from benchmarks.provenance import git_commit
from benchmarks.timed_runs import median_range, spread, train_timed, warm_up

ROOT = Path(__file__).resolve().parent.parent
LEARNERS = ("rdqn minatar (proportional PER)", "rdqn minatar, uniform replay", "SB3 DQN")


def _rdqn(seed: int, steps: int, scheme: str) -> dict[str, Any]:
    from rdqn.presets import preset

    overrides = {
        "seed": seed,
        "replay.scheme": scheme,
        "train.total_steps": steps,
        "train.epsilon_fraction": 1.0,
        "train.eval_every": 0,
    }
    return train_timed(preset("minatar").with_overrides(overrides).to_dict())


def _sb3(seed: int, steps: int, python: Path) -> dict[str, Any]:
    arguments = ("--seed", str(seed), "--steps", str(steps), "--explore", str(steps))
    return run_peer(python, "benchmarks.peers.sb3_minatar", *arguments)


def _rates(run: dict[str, Any]) -> dict[str, float]:
    return {
        "env_steps_per_s": run["env_steps"] / run["seconds"],
        "env_steps_per_cpu_s": run["env_steps"] / run["cpu_seconds"],
    }


def summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per learner: its rates (median, min, max over the seeds) and their ratios to SB3's."""
    sb3 = {row["seed"]: _rates(row) for row in runs.get(LEARNERS[2], [])}
    out: dict[str, Any] = {}
    for learner, rows in runs.items():
        out[learner] = {}
        for key in ("env_steps_per_s", "env_steps_per_cpu_s"):
            out[learner][key] = spread([_rates(row)[key] for row in rows])
            ratios = [_rates(r)[key] / sb3[r["seed"]][key] for r in rows if r["seed"] in sb3]
            out[learner][f"{key}_over_sb3"] = spread(ratios) if learner != LEARNERS[2] else None
    return out


def table(results: dict[str, Any]) -> str:
    """The docs' table (markdown) from a results file."""
    rows = [
        "| learner | env steps/s (wall) | × SB3 | env steps per CPU s | × SB3 |",
        "|---|---:|---:|---:|---:|",
    ]
    for learner, row in summary(results["runs"]).items():
        cells = [
            learner,
            median_range(row["env_steps_per_s"], ",.0f"),
            median_range(row["env_steps_per_s_over_sb3"], ".2f"),
            median_range(row["env_steps_per_cpu_s"], ",.0f"),
            median_range(row["env_steps_per_cpu_s_over_sb3"], ".2f"),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    seeds = ", ".join(str(s) for s in results["seeds"])
    load = results["load_average"]
    rows.append("")
    rows.append(
        f"MinAtar Breakout; seeds {seeds}; {results['steps']:,} env steps per run; median "
        f"(min–max); × SB3: the ratio seed by seed. Load average (1 minute) at the start "
        f"{load['start'][0]:.1f}, at the end {load.get('end', load['start'])[0]:.1f}; commit "
        f"{results['commit']}."
    )
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=100_000, help="env steps per run")
    parser.add_argument("--sb3-python", type=Path, default=SB3_PYTHON)
    parser.add_argument("--out", type=Path, help="write the results JSON here")
    parser.add_argument("--table", type=Path, help="print the table of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text())), end="")
        return
    if not args.sb3_python.exists():
        parser.error(f"{args.sb3_python} is missing: {SETUP_HINT}")
    results: dict[str, Any] = {
        "command": "python -m benchmarks.bench_minatar_loop",
        "commit": git_commit(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "seeds": args.seeds,
        "steps": args.steps,
        "load_average": {"start": os.getloadavg()},
        "runs": {learner: [] for learner in LEARNERS},
    }
    warm_up()
    for seed in args.seeds:
        for learner in LEARNERS:
            if learner == LEARNERS[2]:
                run = _sb3(seed, args.steps, args.sb3_python)
                results["versions"] = run["versions"]
            else:
                scheme = "uniform" if "uniform" in learner else "proportional"
                run = {key: value for key, value in _rdqn(seed, args.steps, scheme).items()
                       if key in ("seed", "env_steps", "seconds", "cpu_seconds")}  # fmt: skip
            results["runs"][learner].append(run)
            rate = _rates(run)["env_steps_per_s"]
            print(f"seed {seed} {learner}: {rate:,.0f} steps/s", flush=True)
            if args.out:
                results["load_average"]["end"] = os.getloadavg()
                results["summary"] = summary(results["runs"])
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(results, indent=1))
    print(table(results), end="")


if __name__ == "__main__":
    main()
