"""Learning-loop speed, measured as ratios within one run.

1. e14 learner (recurrent net, batch 128, T = 8, CPU): the bare network update (agent.learn on a
   ready batch) against the replay work around it (sample + priority update), and the whole loop
   (env step + act + store + sample + learn + priorities) against the bare update rate.
2. per-notebook on CartPole-v1: env steps per second with one update per step, with the fused
   (numba) MLP update and with autograd + torch.optim beside it.
3. The run store: the same training with and without a SQLite RunWriter attached.

Every comparison interleaves its variants round by round and reports medians.

Usage: python -m benchmarks.bench_learner [--quick] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rounds = 3 if args.quick else 5
    results = {
        "e14": bench_e14(updates=10 if args.quick else 40, rounds=rounds),
        "per_notebook": bench_per_notebook(steps=300 if args.quick else 2_000, rounds=rounds),
        "store": bench_store(steps=300 if args.quick else 2_000, rounds=rounds),
    }
    e14 = results["e14"]
    print("e14 learner (recurrent, batch 128, T=8, 1 torch thread)")
    print(f"  bare network update      {e14['bare_updates_per_s']:8.1f} updates/s")
    print(f"  whole loop               {e14['loop_updates_per_s']:8.1f} updates/s")
    print(f"  loop / bare update       {e14['loop_over_bare']:8.1%}   (target >= 85%)")
    print(f"  replay work / update     {e14['replay_share_of_update']:8.2%}   (target <= 5%)")
    per = results["per_notebook"]
    print("per-notebook on CartPole-v1, one update per step")
    print(f"  env steps/s              {per['env_steps_per_s']:8.0f}   (target >= 1,000)")
    print(f"  bare updates/s alone     {per['bare_updates_per_s']:8.0f}   (the ceiling)")
    print(f"  autograd: env steps/s    {per['env_steps_per_s_autograd']:8.0f}")
    print(f"  autograd: bare updates/s {per['bare_updates_per_s_autograd']:8.0f}")
    print(
        f"  fused / autograd         {per['loop_speedup']:8.1f}x loop, "
        f"{per['update_speedup']:.1f}x update"
    )
    shares = {k[6:]: v for k, v in per.items() if k.startswith("share_")}
    print("  time shares              " + ", ".join(f"{k} {v:.0%}" for k, v in shares.items()))
    store = results["store"]
    print("run store (SQLite, batched writes)")
    print(f"  time inside the writer   {store['writer_share']:8.2%}   (target <= 2%)")
    print(f"  steps/s ratio slowdown   {store['slowdown']:8.2%}   (noisy: everything else too)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
