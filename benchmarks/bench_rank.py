"""Rank-based against proportional prioritized replay: the cost of one PER cycle, side by side.

A cycle is what the learner does per update: a stratified `sample(N, 128, beta, rng)` (slots,
P(i), IS weights), then `update_priorities` with 128 new |delta|. Both samplers are filled to N
slots with |delta| ~ |N(0, 1)|, the new ones drawn alike (a steady state), and warmed up; the
two run in the same process, interleaved round by round, and each figure is the median over the
rounds, so the ratio rank / proportional holds even on a noisy shared machine.

Usage: python -m benchmarks.bench_rank [--quick]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np

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


def bench(log2n: int, rounds: int, cycles: int) -> dict[str, float]:
    """Median µs per cycle of each sampler at N = 2^log2n, interleaved round by round."""
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
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    args = parser.parse_args()
    rounds, cycles = (3, 200) if args.quick else (11, 1000)
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}")
    print(f"{rounds} interleaved rounds of {cycles} cycles; median µs per cycle")
    rows = []
    for log2n in SIZES:
        result = bench(log2n, rounds, cycles)
        ratio = result["rank"] / result["proportional"]
        rows.append((log2n, result["proportional"], result["rank"], ratio))
        print(
            f"N = 2^{log2n}: proportional {result['proportional']:7.1f} µs, "
            f"rank {result['rank']:7.1f} µs, rank / proportional {ratio:.2f}"
        )
    print("\n| N | proportional (µs/cycle) | rank (µs/cycle) | rank / proportional |")
    print("|---|---:|---:|---:|")
    for log2n, proportional, rank, ratio in rows:
        print(f"| 2^{log2n} | {proportional:.1f} | {rank:.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
