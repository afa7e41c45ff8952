"""Learning-loop speed, measured as ratios within one run.

1. e14 learner (recurrent net, batch 128, T = 8, CPU): the bare network update (agent.learn on a
   ready batch) against the replay work around it (sample + priority update), and the whole loop
   (env step + act + store + sample + learn + priorities) against the bare update rate.
2. per-notebook on CartPole-v1: env steps per second with one update per step, with the fused
   (numba) MLP update and with autograd + torch.optim beside it.
3. The run store: the same training with and without a SQLite RunWriter attached.

Every comparison interleaves its variants round by round and reports medians.

Usage: python -m benchmarks.bench_learner [--quick] [--json OUT.json]
       python -m benchmarks.bench_learner --table benchmarks/results/learner.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.provenance import git_commit
from rdqn.presets import preset
from rdqn.runs.store import RunStore
from rdqn.runs.writer import RunWriter
from rdqn.training.trainer import Trainer


def _median_rate(fn: Callable[[], int], rounds: int) -> float:
    """Median of (units done / seconds) over `rounds` calls of fn (which returns units done)."""
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        units = fn()
        rates.append(units / (time.perf_counter() - start))
    return statistics.median(rates)


def bench_e14(updates: int, rounds: int) -> dict[str, float]:
    config = preset("e14").with_overrides(
        {"train.total_steps": 10_000_000, "train.learning_starts": 2_000}
    )
    trainer = Trainer(config)
    trainer.run(2_100)  # fill past learning_starts, warm every kernel
    buffer, agent = trainer.buffer, trainer.agent
    batch = buffer.sample(128, beta=0.5)

    def bare_update() -> int:
        for _ in range(updates):
            agent.learn(batch)
        return updates

    def replay_work() -> int:
        for _ in range(updates):
            sampled = buffer.sample(128, beta=0.5)
            buffer.update_priorities(sampled, np.abs(np.random.default_rng(0).normal(size=128)))
        return updates

    def whole_loop() -> int:
        start = trainer.updates
        trainer.run(updates)
        return trainer.updates - start

    rates: dict[str, list[float]] = {"bare update": [], "replay work": [], "whole loop": []}
    for _ in range(rounds):
        rates["bare update"].append(_median_rate(bare_update, 1))
        rates["replay work"].append(_median_rate(replay_work, 1))
        rates["whole loop"].append(_median_rate(whole_loop, 1))
    med = {name: statistics.median(values) for name, values in rates.items()}
    return {
        "bare_updates_per_s": med["bare update"],
        "replay_cycles_per_s": med["replay work"],
        "loop_updates_per_s": med["whole loop"],
        "replay_share_of_update": med["bare update"] / med["replay work"],
        "loop_over_bare": med["whole loop"] / med["bare update"],
    }


def bench_per_notebook(steps: int, rounds: int) -> dict[str, float]:
    """The loop with the fused (numba) MLP update against the same loop with autograd."""
    trainers = {}
    for name, fused in (("fused", True), ("autograd", False)):
        config = preset("per-notebook").with_overrides(
            {"train.total_steps": 10_000_000, "agent.fused_mlp": fused}
        )
        trainers[name] = Trainer(config)
        trainers[name].run(config.train.learning_starts + 200)
    batch = trainers["fused"].buffer.sample(32, beta=0.5)

    def chunk(trainer: Trainer) -> Callable[[], int]:
        def run() -> int:
            start = trainer.env_steps
            trainer.run(steps)
            return trainer.env_steps - start

        return run

    def bare_updates(trainer: Trainer) -> Callable[[], int]:
        def run() -> int:
            for _ in range(steps):
                trainer.agent.learn(batch)
            return steps

        return run

    jobs = {
        "loop": chunk(trainers["fused"]),
        "bare": bare_updates(trainers["fused"]),
        "loop_autograd": chunk(trainers["autograd"]),
        "bare_autograd": bare_updates(trainers["autograd"]),
    }
    rates: dict[str, list[float]] = {name: [] for name in jobs}
    for _ in range(rounds):
        for name, job in jobs.items():
            rates[name].append(_median_rate(job, 1))
    med = {name: statistics.median(values) for name, values in rates.items()}
    totals = trainers["fused"].timings.totals()
    totals.pop("init", None)  # building the trainer is not part of a step
    spent = sum(totals.values())
    return {
        "env_steps_per_s": med["loop"],
        "bare_updates_per_s": med["bare"],
        "env_steps_per_s_autograd": med["loop_autograd"],
        "bare_updates_per_s_autograd": med["bare_autograd"],
        "loop_speedup": med["loop"] / med["loop_autograd"],
        "update_speedup": med["bare"] / med["bare_autograd"],
        **{f"share_{name}": seconds / spent for name, seconds in totals.items() if seconds},
    }


class _TimedSink:
    """A RunWriter whose calls (row appends and the flushes they trigger) are timed."""

    def __init__(self, writer: RunWriter) -> None:
        self.writer = writer
        self.seconds = 0.0

    def add_episode(self, **row: Any) -> None:
        start = time.perf_counter()
        self.writer.add_episode(**row)
        self.seconds += time.perf_counter() - start

    def add_step(self, **row: Any) -> None:
        start = time.perf_counter()
        self.writer.add_step(**row)
        self.seconds += time.perf_counter() - start


def bench_store(steps: int, rounds: int) -> dict[str, float]:
    """Two measures of what the run store costs training: the time spent inside the writer
    (appends + batched SQLite transactions) as a share of the run, and the steps/s ratio of
    the same training with and without the store (noisier: it includes everything else)."""
    config = preset("per-notebook").with_overrides({"train.total_steps": 10_000_000})
    with tempfile.TemporaryDirectory() as home:
        store = RunStore(Path(home) / "rdqn.db")
        run_id = store.create_run(
            config=config.to_dict(), env_id=config.env.id, scheme="proportional", seed=0
        )
        sink = _TimedSink(RunWriter(store, run_id))
        plain, stored = Trainer(config), Trainer(config, sink=sink)
        for trainer in (plain, stored):
            trainer.run(config.train.learning_starts + 200)
        sink.seconds = 0.0
        stored_seconds = 0.0
        rates: dict[str, list[float]] = {"without": [], "with": []}
        for _ in range(rounds):
            for name, trainer in (("without", plain), ("with", stored)):
                start = time.perf_counter()
                trainer.run(steps)
                elapsed = time.perf_counter() - start
                rates[name].append(steps / elapsed)
                if trainer is stored:
                    stored_seconds += elapsed
        sink.writer.close()
        store.close()
    without, with_store = (statistics.median(rates[k]) for k in ("without", "with"))
    return {
        "steps_per_s_without_store": without,
        "steps_per_s_with_store": with_store,
        "slowdown": 1 - with_store / without,
        "writer_share": sink.seconds / stored_seconds,
    }


def table(results: dict[str, Any]) -> str:
    """The docs' table (Markdown) from a results file, and where the per-notebook loop's time
    goes."""
    e14, per, store = results["e14"], results["per_notebook"], results["store"]
    lines = [
        "| measure | result | target |",
        "|---|---:|---:|",
        "| e14 (recurrent, batch 128, T = 8): replay work (sample + priority update) / network "
        f"update | {e14['replay_share_of_update']:.2%} | ≤ 5 % |",
        "| e14: whole loop (env step + act + store + learn) / bare network update rate "
        f"| {e14['loop_over_bare']:.1%} | ≥ 85 % |",
        "| per-notebook on CartPole, one update per step: env steps/s "
        f"| {per['env_steps_per_s']:,.0f} | ≥ 1,000 |",
        "| the same loop with the autograd update instead of the fused one "
        f"| {per['env_steps_per_s_autograd']:,.0f} | |",
        "| per-notebook: bare network updates/s, fused / autograd "
        f"| {per['bare_updates_per_s']:,.0f} / {per['bare_updates_per_s_autograd']:,.0f} | |",
        "| run store (SQLite, batched writes): time spent inside the writer "
        f"| {store['writer_share']:.2%} | ≤ 2 % |",
        "| run store: steps/s with the store vs without (includes all other noise) "
        f"| {store['slowdown']:.1%} slower | |",
    ]
    shares = {k[6:]: v for k, v in per.items() if k.startswith("share_")}
    note = (
        f"Fused / autograd: ×{per['update_speedup']:.1f} the bare update, "
        f"×{per['loop_speedup']:.1f} the whole loop. Of the per-notebook loop's measured time: "
        + ", ".join(f"{name} {share:.0%}" for name, share in shares.items())
        + "."
    )
    if "commit" in results:
        note += f" Commit {results['commit']}, {results['date']}."
    return "\n".join([*lines, "", note]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--table", type=Path, help="print the table of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))), end="")
        return
    torch.set_num_threads(1)
    rounds = 3 if args.quick else 5
    results = {
        "commit": git_commit(),
        "date": datetime.date.today().isoformat(),
        "e14": bench_e14(updates=10 if args.quick else 40, rounds=rounds),
        "per_notebook": bench_per_notebook(steps=300 if args.quick else 2_000, rounds=rounds),
        "store": bench_store(steps=300 if args.quick else 2_000, rounds=rounds),
    }
    print(table(results), end="")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
