"""The replay buffer's own cost around its sampler, and what it means for the per-notebook loop.

1. At the per-notebook setting (N = 10,000 transitions of 4 float32, T = 1, proportional
   α = 0.6, batch 32), interleaved rounds of:
   - the sampler cycle: `ProportionalSampler.sample(N, 32, β, rng)` + `update_priorities`;
   - `ReplayBuffer.sample(32)` alone (validation, the draw, the transition gather);
   - the buffer cycle: `ReplayBuffer.sample(32)` + `ReplayBuffer.update_priorities` (with its
     stale-update guard);
   - `ReplayBuffer.add` of one transition as an environment gives it (float32 arrays, a Python
     int, float and bools), which the training loop pays once per env step;
   reported as medians and as ratios to the sampler cycle.
2. With ``--before REV``: the per-notebook training loop (CartPole, one fused update per env
   step) in env steps/s, this checkout against REV (a `git worktree` in a temporary folder), each
   in its own process, alternating round by round. A process reports the median rate of 10
   chunks of 400 steps; the ratio is the median over rounds of (now / REV).

Usage: python -m benchmarks.bench_buffer [--quick] [--before REV] [--json OUT.json]
       python -m benchmarks.bench_buffer --table benchmarks/results/buffer.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.provenance import git_commit
from rdqn.replay import ProportionalSampler, ReplayBuffer

ROOT = Path(__file__).resolve().parent.parent
CAPACITY, BATCH, ALPHA, BETA = 10_000, 32, 0.6, 0.4
LOOP_CHUNKS, LOOP_CHUNK_STEPS = 10, 400
"""Env steps timed per loop measurement, after the warm-up (learning_starts) is done: the
median rate over chunks, so that a moment of load on the machine moves one chunk, not all."""
LOOP_SCRIPT = f"""
import json, statistics, time
from rdqn.presets import preset
from rdqn.training.trainer import Trainer
config = preset("per-notebook").with_overrides({{"train.total_steps": 1_000_000}})
trainer = Trainer(config)
while trainer.env_steps <= config.train.learning_starts + 200:
    trainer.step()
rates = []
for _ in range({LOOP_CHUNKS}):
    start = time.perf_counter()
    for _ in range({LOOP_CHUNK_STEPS}):
        trainer.step()
    rates.append({LOOP_CHUNK_STEPS} / (time.perf_counter() - start))
print(json.dumps({{"steps_per_second": statistics.median(rates)}}))
"""


def filled_buffer(seed: int = 0) -> ReplayBuffer:
    rng = np.random.default_rng(seed)
    buffer = ReplayBuffer(CAPACITY, (4,), sampler=ProportionalSampler(alpha=ALPHA), seed=seed)
    for _ in range(CAPACITY):
        obs = rng.random(4, dtype=np.float32)
        buffer.add(obs, 1, 1.0, obs, False, False)
    buffer.sampler.update_priorities(np.arange(CAPACITY), rng.random(CAPACITY) + 0.1)
    return buffer


def _time_per_call(fn: Callable[[], None], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def bench_buffer(rounds: int, calls: int) -> dict[str, dict[str, float]]:
    """µs per call of the sampler cycle, `sample(32)` and the buffer cycle, interleaved."""
    buffer = filled_buffer()
    sampler = buffer.sampler
    deltas = [np.abs(np.random.default_rng(k).standard_normal(BATCH)) for k in range(16)]
    draws = np.random.default_rng(1)
    turn = iter(range(1 << 62))

    def sampler_cycle() -> None:
        draw = sampler.sample(CAPACITY, BATCH, BETA, draws)
        sampler.update_priorities(draw.indices, deltas[next(turn) & 15])

    def buffer_sample() -> None:
        buffer.sample(BATCH, beta=BETA)

    def buffer_cycle() -> None:
        batch = buffer.sample(BATCH, beta=BETA)
        buffer.update_priorities(batch, deltas[next(turn) & 15])

    obs = np.random.default_rng(2).random((2, 4), dtype=np.float32)

    def buffer_add() -> None:
        buffer.add(obs[0], 1, 1.0, obs[1], False, False)

    variants = {
        "sampler cycle (sample + update_priorities)": sampler_cycle,
        "ReplayBuffer.sample(32)": buffer_sample,
        "ReplayBuffer cycle (sample + update_priorities)": buffer_cycle,
        "ReplayBuffer.add (one env step's transition)": buffer_add,
    }
    for fn in variants.values():
        _time_per_call(fn, calls // 10)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            times[name].append(_time_per_call(fn, calls))
    reference = statistics.median(times["sampler cycle (sample + update_priorities)"])
    return {
        name: {
            "us": statistics.median(values),
            "x_sampler_cycle": statistics.median(values) / reference,
        }
        for name, values in times.items()
    }


def _loop_steps_per_second(checkout: Path) -> float:
    done = subprocess.run(
        [sys.executable, "-c", LOOP_SCRIPT],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(done.stdout.strip().splitlines()[-1])["steps_per_second"])


def bench_loop(before: str, rounds: int) -> dict[str, object]:
    """Per-notebook env steps/s of this checkout and of ``before``, alternating round by round."""
    with tempfile.TemporaryDirectory(prefix="rdqn-before-") as folder:
        old = Path(folder) / "checkout"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(old), before],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            _loop_steps_per_second(old)  # compiles the old kernels once, outside the timing
            _loop_steps_per_second(ROOT)
            now, then = [], []
            for round_ in range(rounds):  # which goes first alternates too
                for checkout in (ROOT, old) if round_ % 2 == 0 else (old, ROOT):
                    (now if checkout == ROOT else then).append(_loop_steps_per_second(checkout))
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, capture_output=True
            )
    return {
        "before": before,
        "steps_per_second_before": statistics.median(then),
        "steps_per_second_now": statistics.median(now),
        "ratio": statistics.median(n / t for n, t in zip(now, then, strict=True)),
        "rounds": rounds,
    }


def table(results: dict[str, Any]) -> str:
    """The docs' table (Markdown) from a results file, with the training loop's line when the
    file has one (``--before``)."""
    lines = ["| | µs per call | × sampler cycle |", "|---|---:|---:|"]
    for name, row in results["buffer"].items():
        lines.append(f"| {name} | {row['us']:.1f} | {row['x_sampler_cycle']:.2f} |")
    lines += ["", "Medians over the interleaved rounds."]
    loop = results.get("loop")
    if loop:
        lines[-1] += (
            f" The per-notebook training loop: {loop['steps_per_second_now']:,.0f} env steps/s "
            f"with this checkout, {loop['steps_per_second_before']:,.0f} at {loop['before']} "
            f"(×{loop['ratio']:.2f}, the median of {loop['rounds']} alternating rounds' ratios)."
        )
    if "commit" in results:
        lines[-1] += f" Commit {results['commit']}, {results['date']}."
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and calls")
    parser.add_argument("--before", help="a git revision to compare the training loop with")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--table", type=Path, help="print the table of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))), end="")
        return
    rounds, calls = (3, 2_000) if args.quick else (15, 10_000)
    results: dict[str, Any] = {
        "commit": git_commit(),
        "date": datetime.date.today().isoformat(),
        "rounds": rounds,
        "buffer": bench_buffer(rounds, calls),
    }
    print(f"Replay buffer around its sampler: N = {CAPACITY:,}, batch {BATCH}, T = 1, medians")
    if args.before:
        results["loop"] = bench_loop(args.before, 3 if args.quick else 9)
    print(table(results), end="")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
