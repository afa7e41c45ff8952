"""Where runs train: throughput of worker processes and Ray actors, and what the relay costs.

Every measure trains the per-notebook preset on CartPole (fused MLP update, one update per env
step, one torch thread per run) at full speed and reads env steps per second from the runs'
snapshots, after a warm-up, over a fixed window. Variants run interleaved, round by round:

  in-process      the run's loop in this process: `Trainer.step` with nothing relayed
  1 worker        one run in a worker process, its snapshots relayed to this process
  2 workers       two runs in two worker processes at once (total env steps/s)
  1 Ray actor     one run as an actor of a local Ray instance (writes relayed too)
  2 Ray actors    two at once

Start overhead: seconds from `RunHandle.start` to the first snapshot, for a worker forked from
the warm zygote and for a new Ray actor (a fresh process on some node).

Usage: python -m benchmarks.bench_executors [--seconds 15] [--rounds 3] [--no-ray] [--json OUT]
       python -m benchmarks.bench_executors --table benchmarks/results/executors.json
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

import torch

from benchmarks.provenance import git_commit
from rdqn.presets import preset
from rdqn.runs.store import RunStore
from rdqn.serve.executors import Executor, ProcessExecutor
from rdqn.serve.handle import RunHandle
from rdqn.training.trainer import Trainer

CONFIG = preset("per-notebook").with_overrides({"train.total_steps": 10_000_000})
WARM_UP_STEPS = 2_000


def in_process(seconds: float) -> float:
    """Env steps/s of the bare loop in this process."""
    trainer = Trainer(CONFIG)
    trainer.run(steps=WARM_UP_STEPS)
    start, steps = time.perf_counter(), trainer.env_steps
    while time.perf_counter() - start < seconds:
        trainer.run(steps=200)
    rate = (trainer.env_steps - steps) / (time.perf_counter() - start)
    trainer.close()
    return rate


def in_workers(executor: Executor, store: RunStore, runs: int, seconds: float) -> float:
    """Total env steps/s of ``runs`` runs training at once in ``executor``'s workers."""
    handles = [
        RunHandle(CONFIG.with_overrides({"seed": k}), store=store, executor=executor).start()
        for k in range(runs)
    ]

    def steps() -> int:
        return sum(h.snapshot().env_steps for h in handles)  # type: ignore[union-attr]

    while any(h.snapshot() is None or h.snapshot().env_steps < WARM_UP_STEPS for h in handles):
        time.sleep(0.05)
    start, first = time.perf_counter(), steps()
    time.sleep(seconds)
    rate = (steps() - first) / (time.perf_counter() - start)
    for handle in handles:
        handle.stop(wait=False)
    for handle in handles:
        handle.stop()
    return rate


def start_overhead(executor: Executor, store: RunStore) -> float:
    """Seconds from start to the first snapshot of a run (its trainer built)."""
    begin = time.perf_counter()
    handle = RunHandle(CONFIG, store=store, executor=executor).start()
    while handle.snapshot() is None:
        time.sleep(0.005)
    elapsed = time.perf_counter() - begin
    handle.stop()
    return elapsed


def _span(values: list[float], fmt: str) -> str:
    low, high = format(min(values), fmt), format(max(values), fmt)
    return f"{format(statistics.median(values), fmt)} ({low}-{high})"


def table(results: dict[str, Any]) -> str:
    """The docs' table (Markdown) from a results file: env steps/s, median (range) over the
    rounds, each against the in-process loop (or, for two runs, against one)."""
    rates, medians = results["rates"], results["medians"]
    labels = {
        "in-process": "the loop in this process, nothing relayed",
        "1 worker": "one run in a worker process, snapshots relayed",
        "2 workers": "two runs in two worker processes, total",
        "1 Ray actor": "one run as a Ray actor, writes relayed",
        "2 Ray actors": "two Ray actors, total",
    }
    lines = ["| | env steps/s, median (range) | against |", "|---|---:|---:|"]
    for name, values in rates.items():
        if name.startswith("2 "):
            one = "1 worker" if name == "2 workers" else "1 Ray actor"
            against = f"{medians[name] / medians[one]:.2f} × {one}"
        else:
            against = f"{medians[name] / medians['in-process']:.1%} of in-process"
        lines.append(f"| {labels.get(name, name)} | {_span(values, ',.0f')} | {against} |")
    starts = results["starts"]
    note = [
        f"Medians of {len(rates['in-process'])} interleaved rounds. Start to the first snapshot: "
        + ", ".join(f"{name} {_span(values, '.2f')} s" for name, values in starts.items())
    ]
    if "ray_init_seconds" in results:
        note.append(f"; the local Ray instance's start {results['ray_init_seconds']:.1f} s")
    note.append(".")
    if "commit" in results:
        note.append(f" Commit {results['commit']}, {results['date']}.")
    return "\n".join([*lines, "", "".join(note)]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-ray", action="store_true", help="leave out the Ray variants")
    parser.add_argument("--json")
    parser.add_argument("--table", type=Path, help="print the table of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))), end="")
        return
    torch.set_num_threads(1)
    store = RunStore(Path(tempfile.mkdtemp(prefix="rdqn-bench-")) / "rdqn.db")
    process = ProcessExecutor(capacity=2)
    process.prepare()
    variants: dict[str, Callable[[], float]] = {
        "in-process": lambda: in_process(args.seconds),
        "1 worker": lambda: in_workers(process, store, 1, args.seconds),
        "2 workers": lambda: in_workers(process, store, 2, args.seconds),
    }
    starts: dict[str, list[float]] = {"worker (zygote)": []}
    ray = None
    if not args.no_ray:
        from rdqn.serve.ray_executor import RayExecutor

        begin = time.perf_counter()
        ray = RayExecutor("local", num_cpus=2)
        ray_init = time.perf_counter() - begin
        variants["1 Ray actor"] = lambda: in_workers(ray, store, 1, args.seconds)
        variants["2 Ray actors"] = lambda: in_workers(ray, store, 2, args.seconds)
        starts["Ray actor"] = []
    in_workers(process, store, 1, 1.0)  # the zygote is warm before anything is timed
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, measure in variants.items():
            rates[name].append(measure())
        starts["worker (zygote)"].append(start_overhead(process, store))
        if ray is not None:
            starts["Ray actor"].append(start_overhead(ray, store))
    medians = {name: statistics.median(values) for name, values in rates.items()}
    start_medians = {name: statistics.median(values) for name, values in starts.items()}
    base = medians["in-process"]
    one = medians["1 worker"]
    for name, rate in medians.items():
        print(f"{name:14s} {rate:7.0f} env steps/s  {rate / base:6.1%} of in-process")
    print(f"2 workers / 1 worker: {medians['2 workers'] / one:.2f}x")
    if ray is not None:
        print(
            f"2 Ray actors / 1 Ray actor: {medians['2 Ray actors'] / medians['1 Ray actor']:.2f}x"
        )
        print(f"Ray instance start: {ray_init:.1f} s")
    for name, seconds in start_medians.items():
        print(f"start to first snapshot, {name}: {seconds:.2f} s")
    if args.json:
        result = {
            "commit": git_commit(),
            "date": datetime.date.today().isoformat(),
            "rates": rates,
            "medians": medians,
            "starts": starts,
        }
        if ray is not None:
            result["ray_init_seconds"] = ray_init
        Path(args.json).write_text(json.dumps(result, indent=2))
    if ray is not None:
        ray.close()
    process.close()


if __name__ == "__main__":
    main()
