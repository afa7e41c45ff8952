"""Rank-based against proportional prioritized replay: the cost of one PER cycle, side by side.

A cycle is what the learner does per update: a stratified `sample(N, 128, beta, rng)` (slots,
P(i), IS weights), then `update_priorities` with 128 new |delta|. Both samplers are filled to N
slots with |delta| ~ |N(0, 1)|, the new ones drawn alike (a steady state), and warmed up; the
two run in the same process, interleaved round by round, and each figure is the median over the
rounds, so the ratio rank / proportional holds even on a noisy shared machine. The ratio's range is
over the rounds' own ratios.

Usage: python -m benchmarks.bench_rank [--quick] [--out benchmarks/results/rank.json]
       python -m benchmarks.bench_rank --table benchmarks/results/rank.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.provenance import git_commit
from rdqn.replay import ProportionalSampler, RankBasedSampler, Sampler

BATCH = 128
BETA = 0.4
SIZES = (14, 17, 20)


def filled(sampler: Sampler, n: int, rng: np.random.Generator) -> Sampler:
    """`sampler` attached to n slots, all stored, with |delta| ~ |N(0, 1)|."""
    sampler.attach(n)
    for slot in range(n):
        sampler.on_add(slot)
    sampler.update_priorities(np.arange(n), np.abs(rng.standard_normal(n)))
    return sampler


def run_cycles(sampler: Sampler, n: int, news: np.ndarray, rng: np.random.Generator) -> None:
    for magnitudes in news:
        draw = sampler.sample(n, BATCH, BETA, rng)
        sampler.update_priorities(draw.indices, magnitudes)


def bench(log2n: int, rounds: int, cycles: int) -> dict[str, list[float]]:
    """µs per cycle of each sampler at N = 2^log2n in every round, interleaved round by round."""
    n = 1 << log2n
    rng = np.random.default_rng(log2n)
    samplers = {
        "proportional": filled(ProportionalSampler(alpha=0.6), n, rng),
        "rank": filled(RankBasedSampler(alpha=0.7), n, rng),
    }
    # Fresh |delta| for every cycle of every round, as a learner's are: magnitudes used again
    # would each be an exact tie with a priority still stored, which real TD errors never are.
    # Both samplers get the same ones.
    news = np.abs(rng.standard_normal((rounds + 1, cycles, BATCH)))
    for sampler in samplers.values():  # compilation, caches, the steady state of the order
        run_cycles(sampler, n, news[rounds], rng)
    times: dict[str, list[float]] = {name: [] for name in samplers}
    for round_news in news[:rounds]:
        for name, sampler in samplers.items():
            start = time.perf_counter()
            run_cycles(sampler, n, round_news, rng)
            times[name].append((time.perf_counter() - start) / cycles * 1e6)
    return times


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def table(results: dict[str, Any]) -> str:
    """The docs' table (Markdown) from a results file: medians over the rounds, the ratio's
    range over the rounds' own ratios."""
    lines = [
        "| N | proportional (µs/cycle) | rank (µs/cycle) | rank / proportional, median (range) |",
        "|---|---:|---:|---:|",
    ]
    for row in results["sizes"]:
        ratio = row["ratio"]
        lines.append(
            f"| 2^{row['log2n']} | {row['proportional']['median']:.1f} "
            f"| {row['rank']['median']:.1f} "
            f"| {ratio['median']:.2f} ({ratio['min']:.2f}-{ratio['max']:.2f}) |"
        )
    lines += [
        "",
        f"{results['rounds']} interleaved rounds of {results['cycles']:,} cycles, median µs per "
        f"cycle; {results['date']}, commit {results['commit']}, load average "
        f"{results['load_average'][0]:.1f} at the start.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--out", type=Path, help="write the results JSON here")
    parser.add_argument("--table", type=Path, help="print the table of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))), end="")
        return
    rounds, cycles = (3, 200) if args.quick else (11, 1000)
    results: dict[str, Any] = {
        "command": "python -m benchmarks.bench_rank" + (" --quick" if args.quick else ""),
        "date": datetime.date.today().isoformat(),
        "commit": git_commit(),
        "versions": {"python": platform.python_version(), "numpy": np.__version__},
        "machine": {"machine": platform.machine(), "cpus": os.cpu_count()},
        "load_average": list(os.getloadavg()),
        "rounds": rounds,
        "cycles": cycles,
        "sizes": [],
    }
    print(f"{rounds} interleaved rounds of {cycles} cycles; median µs per cycle")
    for log2n in SIZES:
        times = bench(log2n, rounds, cycles)
        ratios = [r / p for r, p in zip(times["rank"], times["proportional"], strict=True)]
        row = {
            "log2n": log2n,
            "us_per_cycle": times,
            "proportional": _spread(times["proportional"]),
            "rank": _spread(times["rank"]),
            "ratio": _spread(ratios),
        }
        results["sizes"].append(row)
        print(
            f"N = 2^{log2n}: proportional {row['proportional']['median']:7.1f} µs, "
            f"rank {row['rank']['median']:7.1f} µs, rank / proportional "
            f"{row['ratio']['median']:.2f}",
            flush=True,
        )
    print()
    print(table(results), end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"written to {args.out}")


if __name__ == "__main__":
    main()
