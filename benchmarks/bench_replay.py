"""Replay-engine benchmark: the PER cycle, buffer sampling with windows, and memory.

The standard measure is one *cycle*: a stratified sample of 128 from N leaves, their probabilities
(and IS weights), then 128 new priorities written back. Every implementation runs in the same
process, interleaved round by round, so the ratios are comparable even on a noisy shared machine.

References, measured beside rdqn in the same run:
- seed-style: the E14 notebook's `np.random.choice(p=...)` sampler (seeds/000);
- per-item Python sum tree: the PER notebook's pseudo-code (seeds/002), one descent per item;
- batched NumPy sum tree: the same tree, all 128 descents vectorized level by level;
- cpprb `PrioritizedReplayBuffer` and tianshou's numba `SegmentTree`, when installed
  (`pip install -r benchmarks/requirements.txt`).

Usage: python -m benchmarks.bench_replay [--quick] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from rdqn.replay import ProportionalSampler, ReplayBuffer

BATCH = 128
ALPHA, BETA, EPS = 0.6, 0.4, 1e-6


# ---------------------------------------------------------------- reference implementations
class SeedChoiceSampler:
    """The E14 notebook: p^alpha normalised, np.random.choice, weights over the batch max."""

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.priorities = rng.random(n) + 0.1
        self.rng = rng

    def cycle(self, new: np.ndarray) -> None:
        probs = self.priorities**ALPHA
        probs /= probs.sum()
        idx = self.rng.choice(len(probs), BATCH, p=probs)
        weights = (len(probs) * probs[idx]) ** (-BETA)
        weights /= weights.max()
        self.priorities[idx] = np.abs(new) + EPS


class PythonSumTree:
    """The PER notebook's sum tree (seeds/002): array of 2N-1 nodes, one Python descent per item."""

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.n = n
        self.tree = np.zeros(2 * n - 1)
        self.tree[n - 1 :] = (rng.random(n) + 0.1) ** ALPHA
        for i in range(n - 2, -1, -1):
            self.tree[i] = self.tree[2 * i + 1] + self.tree[2 * i + 2]
        self.rng = rng

    def _update(self, idx: int, value: float) -> None:
        tree = self.tree
        tree[idx] = value
        while idx != 0:
            idx = (idx - 1) // 2
            tree[idx] = tree[2 * idx + 1] + tree[2 * idx + 2]

    def _get(self, value: float) -> int:
        tree, idx = self.tree, 0
        while idx < self.n - 1:
            left = 2 * idx + 1
            if value <= tree[left]:
                idx = left
            else:
                value -= tree[left]
                idx = left + 1
        return idx

    def cycle(self, new: np.ndarray) -> None:
        total = self.tree[0]
        segment = total / BATCH
        leaves, probs = [], []
        for k in range(BATCH):
            leaf = self._get(self.rng.uniform(k * segment, (k + 1) * segment))
            leaves.append(leaf)
            probs.append(self.tree[leaf] / total)
        weights = (self.n * np.array(probs)) ** (-BETA)
        weights /= weights.max()
        for leaf, value in zip(leaves, new, strict=True):
            self._update(leaf, (abs(value) + EPS) ** ALPHA)


class NumpySumTree:
    """The same tree with all 128 descents and updates vectorized level by level in NumPy."""

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.offset = n
        self.tree = np.zeros(2 * n)
        self.tree[n:] = (rng.random(n) + 0.1) ** ALPHA
        for level_start in (n >> k for k in range(1, n.bit_length())):
            nodes = np.arange(level_start, 2 * level_start)
            self.tree[nodes] = self.tree[2 * nodes] + self.tree[2 * nodes + 1]
        self.rng = rng

    def cycle(self, new: np.ndarray) -> None:
        tree = self.tree
        total = tree[1]
        masses = (np.arange(BATCH) + self.rng.random(BATCH)) * (total / BATCH)
        nodes = np.ones(BATCH, np.int64)
        while nodes[0] < self.offset:
            left = tree[2 * nodes]
            go_right = masses >= left
            masses = np.where(go_right, masses - left, masses)
            nodes = 2 * nodes + go_right
        probs = tree[nodes] / total
        weights = (self.offset * probs) ** (-BETA)
        weights /= weights.max()
        tree[nodes] = (np.abs(new) + EPS) ** ALPHA
        nodes = np.unique(nodes // 2)
        while nodes[0] >= 1:
            tree[nodes] = tree[2 * nodes] + tree[2 * nodes + 1]
            nodes = np.unique(nodes // 2)


class RdqnSampler:
    """rdqn's ProportionalSampler alone (what a tree benchmark compares)."""

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.sampler = ProportionalSampler(alpha=ALPHA, eps=EPS)
        self.sampler.attach(n)
        self.sampler.update_priorities(np.arange(n), rng.random(n) + 0.1)
        self.rng, self.n = rng, n

    def cycle(self, new: np.ndarray) -> None:
        draw = self.sampler.sample(self.n, BATCH, BETA, self.rng)
        self.sampler.update_priorities(draw.indices, np.abs(new))


class RdqnBuffer:
    """rdqn's whole ReplayBuffer (validation, stale-update guard, transition gather), T = 1."""

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.buffer = _filled_buffer(n, 1, rng)
        self.buffer.sampler.update_priorities(np.arange(n), rng.random(n) + 0.1)

    def cycle(self, new: np.ndarray) -> None:
        batch = self.buffer.sample(BATCH, beta=BETA)
        self.buffer.update_priorities(batch, np.abs(new))


class Cpprb:
    def __init__(self, n: int, rng: np.random.Generator) -> None:
        import cpprb

        self.buffer = cpprb.PrioritizedReplayBuffer(
            n, {"obs": {"shape": 4}, "act": {}, "rew": {}, "done": {}}, alpha=ALPHA, eps=EPS
        )
        self.buffer.add(
            obs=rng.random((n, 4)),
            act=np.zeros(n),
            rew=np.zeros(n),
            done=np.zeros(n),
            priorities=rng.random(n) + 0.1,
        )

    def cycle(self, new: np.ndarray) -> None:
        sample = self.buffer.sample(BATCH, beta=BETA)
        self.buffer.update_priorities(sample["indexes"], np.abs(new) + EPS)


class TianshouTree:
    """tianshou's numba SegmentTree driven the way its PrioritizedReplayBuffer drives it."""

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        from tianshou.data import SegmentTree

        self.tree = SegmentTree(n)
        self.tree[np.arange(n)] = (rng.random(n) + 0.1) ** ALPHA
        self.min_priority = 0.1**ALPHA
        self.rng = rng

    def cycle(self, new: np.ndarray) -> None:
        scalar = self.rng.random(BATCH) * self.tree.reduce()
        idx = self.tree.get_prefix_sum_idx(scalar)
        probs = self.tree[idx] / self.tree.reduce()
        weights = (self.tree[idx] / self.min_priority) ** (-BETA)
        del probs, weights
        self.tree[idx] = (np.abs(new) + EPS) ** ALPHA


IMPLEMENTATIONS: dict[str, type] = {
    "rdqn ProportionalSampler": RdqnSampler,
    "rdqn ReplayBuffer (T=1)": RdqnBuffer,
    "tianshou SegmentTree (numba)": TianshouTree,
    "cpprb PrioritizedReplayBuffer": Cpprb,
    "batched NumPy sum tree": NumpySumTree,
    "per-item Python sum tree": PythonSumTree,
    "seed np.random.choice(p=...)": SeedChoiceSampler,
}
SLOW = {"per-item Python sum tree", "seed np.random.choice(p=...)"}


def _filled_buffer(n: int, window: int, rng: np.random.Generator) -> ReplayBuffer:
    buffer = ReplayBuffer(n, (4,), window=window, sampler=ProportionalSampler(), seed=0)
    obs = rng.random((n + 1, 4), dtype=np.float32)
    for t in range(n):
        buffer.add(obs[t], t % 2, 1.0, obs[t + 1], bool(t % 200 == 199), False)
    return buffer


def _time_per_call(fn: Callable[[], None], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def bench_cycle(log2n: int, rounds: int, calls: int) -> dict[str, float]:
    """Median µs per cycle of every available implementation, interleaved round by round."""
    n = 1 << log2n
    rng = np.random.default_rng(0)
    impls = {}
    for name, cls in IMPLEMENTATIONS.items():
        try:
            impls[name] = cls(n, np.random.default_rng(1))
        except ImportError:
            continue
    news = [rng.standard_normal(BATCH) for _ in range(16)]
    samples: dict[str, list[float]] = {name: [] for name in impls}
    for impl in impls.values():  # warm-up (numba compilation, caches)
        impl.cycle(news[0])
    for r in range(rounds):
        for name, impl in impls.items():
            k = max(1, calls // 50) if name in SLOW else calls
            it = iter(range(10**9))
            samples[name].append(
                _time_per_call(lambda impl=impl, it=it: impl.cycle(news[next(it) % 16]), k)
            )
            if name in SLOW and r >= 2:
                break
    return {name: statistics.median(v) * 1e6 for name, v in samples.items() if v}


def bench_window_sample(rounds: int, calls: int) -> dict[str, float]:
    """µs per ReplayBuffer.sample(128) with T=8 windows of 4 floats from 50,000 transitions."""
    rng = np.random.default_rng(0)
    out = {}
    for window in (1, 8):
        buffer = _filled_buffer(50_000, window, rng)
        buffer.sample(BATCH)
        times = [
            _time_per_call(lambda b=buffer: b.sample(BATCH, beta=BETA), calls)
            for _ in range(rounds)
        ]
        out[f"ReplayBuffer.sample(128), T={window}, 50,000 x 4 floats"] = (
            statistics.median(times) * 1e6
        )
    return out


def bench_memory(n: int) -> dict[str, dict[str, float]]:
    """Bytes of a full buffer of n transitions of 4 float32s (T = 1 and 32) against the budget."""
    rng = np.random.default_rng(0)
    obs_bytes = 4 * 4
    budget = 2.2 * n * obs_bytes + 96 * n
    out = {}
    for window in (1, 32):
        tracemalloc.start()
        buffer = _filled_buffer(n, window, rng)
        traced, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out[f"T={window}"] = {
            "nbytes": buffer.nbytes,
            "traced_bytes": traced,
            "bytes_per_item": buffer.nbytes / n,
            "budget_bytes": budget,
            "fraction_of_budget": buffer.nbytes / budget,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (for a smoke run)")
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args()
    rounds, calls = (3, 200) if args.quick else (9, 2000)
    results = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "cycle_us": {f"2^{k}": bench_cycle(k, rounds, calls) for k in (14, 20)},
        "sample_us": bench_window_sample(rounds, calls),
        "memory": bench_memory(50_000),
    }
    for size, table in results["cycle_us"].items():
        base = table["rdqn ProportionalSampler"]
        print(f"\nPER cycle at N = {size}: sample 128 + P(i) + IS weights + 128 priority writes")
        print(f"{'implementation':34s} {'µs/cycle':>10s} {'x rdqn':>8s}")
        for name, us in sorted(table.items(), key=lambda kv: kv[1]):
            print(f"{name:34s} {us:10.1f} {us / base:8.1f}")
    print("\nBuffer sampling with windows")
    for name, us in results["sample_us"].items():
        print(f"{name:55s} {us:8.1f} µs")
    print("\nMemory of a full buffer of 50,000 transitions (obs = 4 float32)")
    for name, m in results["memory"].items():
        print(
            f"{name:5s} {m['nbytes'] / 1e6:6.2f} MB = {m['bytes_per_item']:.1f} B/item "
            f"({m['fraction_of_budget']:.0%} of the 2.2 x N x obs + 96 N budget; "
            f"tracemalloc {m['traced_bytes'] / 1e6:.2f} MB)"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
