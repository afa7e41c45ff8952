"""The whole DQN loop against Stable-Baselines3's DQN at the same hyperparameters, on CartPole-v1.

Both train the `per-notebook` preset's setup for the same env-step budget and seeds, one run at a
time, one torch thread each: MLP 64-64, Adam 1e-3, gamma 0.99, Huber loss, gradient norm 10,
batch 32, one update per env step after 1,000 warm-up steps, 10,000 transitions, a hard target
copy every 500 updates, epsilon 1 -> 0.01 over the first 10 % (`benchmarks/peers/sb3_dqn.py`
states SB3's side). rdqn runs twice per seed: as the preset (proportional PER, alpha .6, beta
.4 -> 1) and with uniform replay, SB3's only replay. Measured per run: env steps per wall second
and per CPU second of the process over the whole run, and the env steps, wall seconds and CPU
seconds (from building the trainer or model) until the mean return of 20 consecutive episodes
first reaches 475. On the shared machine the wall clock measures the load as much as the code; a
one-thread run's CPU time is what it would take on a core of its own. rdqn runs in this process,
SB3 in a fresh process of its venv; each clock starts after a warm-up run (kernels and lazy
imports loaded).

SB3 has its own venv (`bash benchmarks/peers/setup_sb3.sh` creates `.venv-sb3`: torch 2.13.0 CPU
as here, SB3 2.9.2). CleanRL is not run: the only CleanRL that pip can install (0.4.8) has a
dqn.py for the old gym API (``env.seed``, ``Monitor``, 4-tuple ``step``), which needs gym 0.21,
and gym 0.21 does not build on Python 3.11.

Usage (the published figures ran at ``nice -n -10`` on the shared 2-core machine):
    nice -n -10 python -m benchmarks.bench_whole_loop --out benchmarks/results/whole_loop.json
    python -m benchmarks.bench_whole_loop --table benchmarks/results/whole_loop.json
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.provenance import git_commit
from benchmarks.timed_runs import (
    measures,
    median_range,
    spread,
    summarise,
    train_timed,
    warm_up,
)

ROOT = Path(__file__).resolve().parent.parent
SB3_PYTHON = ROOT / ".venv-sb3" / "bin" / "python"
SETUP_HINT = "create it with `bash benchmarks/peers/setup_sb3.sh` (.venv-sb3, about 1 GB)"
CLEANRL_SKIPPED = (
    "not run: pip's only CleanRL (0.4.8) has a dqn.py for the old gym API (env.seed, Monitor, "
    "4-tuple step), which needs gym 0.21, and gym 0.21 does not build on Python 3.11"
)
LEARNERS = ("rdqn per-notebook (proportional PER)", "rdqn per-notebook, uniform replay", "SB3 DQN")


def _rdqn_config(seed: int, steps: int, scheme: str) -> dict[str, Any]:
    from rdqn.presets import preset

    config = preset("per-notebook").with_overrides(
        {"seed": seed, "train.total_steps": steps, "replay.scheme": scheme}
    )
    return config.to_dict()


def _rdqn(seed: int, steps: int, scheme: str) -> dict[str, Any]:
    return train_timed(_rdqn_config(seed, steps, scheme))


def _sb3(seed: int, steps: int, python: Path) -> dict[str, Any]:
    return run_peer(python, "benchmarks.peers.sb3_dqn", "--seed", str(seed), "--steps", str(steps))


def run_peer(python: Path, module: str, *args: str) -> dict[str, Any]:
    """The JSON line a peer's script (``module``, run by ``python``) prints last."""
    done = subprocess.run(
        [str(python), "-m", module, *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"SB3 run failed (status {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per learner: `summarise`; and the ratios of rdqn's rates to SB3's, seed by seed."""
    out: dict[str, Any] = {learner: summarise(rows) for learner, rows in runs.items()}
    sb3 = {row["seed"]: measures(row) for row in runs.get(LEARNERS[2], [])}
    for learner in LEARNERS[:2]:
        for key in ("env_steps_per_s", "env_steps_per_cpu_s"):
            ratios = [
                measures(row)[key] / sb3[row["seed"]][key]
                for row in runs.get(learner, [])
                if row["seed"] in sb3
            ]
            out[learner][f"{key}_over_sb3"] = spread(ratios)
    return out


def table(results: dict[str, Any]) -> str:
    """The docs' table (markdown) from a results file."""
    rows = [
        "| learner | env steps/s (wall) | × SB3 | env steps per CPU s | × SB3 | reached 475 | "
        "env steps to 475 | wall s to 475 | CPU s to 475 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for learner, row in summary(results["runs"]).items():
        cells = [
            learner,
            median_range(row["env_steps_per_s"], ",.0f"),
            median_range(row.get("env_steps_per_s_over_sb3"), ".2f"),
            median_range(row["env_steps_per_cpu_s"], ",.0f"),
            median_range(row.get("env_steps_per_cpu_s_over_sb3"), ".2f"),
            row["reached_475"],
            median_range(row["steps_to_475"], ",.0f"),
            median_range(row["seconds_to_475"], ".1f"),
            median_range(row["cpu_seconds_to_475"], ".1f"),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    seeds = ", ".join(str(s) for s in results["seeds"])
    load = results["load_average"]
    rows.append("")
    rows.append(
        f"Seeds {seeds}; {results['steps']:,} env steps per run; median (min–max); × SB3: the "
        f"ratio seed by seed. Load average (1 minute) at the start {load['start'][0]:.1f}, at "
        f"the end {load.get('end', load['start'])[0]:.1f}"
        + (f"; commit {results['commit']}" if "commit" in results else "")
        + f". CleanRL: {results['cleanrl']}."
    )
    return "\n".join(rows) + "\n"


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("torch", "numpy", "numba", "gymnasium"):
        out[package] = importlib.metadata.version(package)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
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
        "command": "nice -n -10 python -m benchmarks.bench_whole_loop",
        "commit": git_commit(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "versions": _versions(),
        "seeds": args.seeds,
        "steps": args.steps,
        "cleanrl": CLEANRL_SKIPPED,
        "load_average": {"start": os.getloadavg()},
        "runs": {learner: [] for learner in LEARNERS},
    }
    # One run at a time, the three learners in turn for every seed, so that a change in the
    # machine's load falls on all of them alike.
    warm_up()
    for seed in args.seeds:
        for learner in LEARNERS:
            if learner == LEARNERS[2]:
                run = _sb3(seed, args.steps, args.sb3_python)
                results["versions"]["stable_baselines3"] = run["versions"]["stable_baselines3"]
            else:
                scheme = "uniform" if "uniform" in learner else "proportional"
                run = _rdqn(seed, args.steps, scheme)
            results["runs"][learner].append(run)
            measured = measures(run)
            print(
                f"seed {seed} {learner}: {measured['env_steps_per_s']:,.0f} steps/s, 475 at "
                f"{measured['steps_to_475']} steps / {measured['seconds_to_475']} s",
                flush=True,
            )
            if args.out:
                results["load_average"]["end"] = os.getloadavg()
                results["summary"] = summary(results["runs"])
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(results, indent=1))
    print(table(results), end="")


if __name__ == "__main__":
    main()
