"""A/B of rank-based replay's kernels: variants called in turn on one sampler's state.

Runs of `bench_rank` in alternating processes drift by about 5 % from one run to the next, and
two rank orders in one process compete for the caches; a change of a few percent is lost in
either. Here one `RankBasedSampler` is filled once, and every round runs the same number of
cycles (a stratified sample of 128, then 128 priority writes with fresh |delta|) through each
set of kernels in turn, on that one state: first the package's own kernels, then each variant,
then the package's kernels again as a control. The figure per variant is the median over the
rounds of its time / the package kernels' time in the same round; the control's tells the
noise (0.99-1.01 on this machine).

A variant is a Python file that defines `rank_sample_kernel` and/or `write_kernel` with the
package's signatures (`rdqn.replay.rank.sampler`, `rdqn.replay.rank.writes`); what it does not
define is the package's. Make one from a copy of the module with the change, its imports left
as they are. Each variant's first draw must equal the package's, or the script stops.

Usage: python -m benchmarks.ab_rank_kernels VARIANT.py [VARIANT.py ...] [--log2n 17]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

from benchmarks.bench_rank import BATCH, BETA, filled
from rdqn.replay import RankBasedSampler
from rdqn.replay.rank.sampler import rank_sample_kernel
from rdqn.replay.rank.writes import write_kernel

Kernels = tuple[Callable[..., bool], Callable[..., float]]


def load(path: Path) -> ModuleType:
    """The variant file as a module of its own (a unique name, so that numba compiles it apart)."""
    spec = importlib.util.spec_from_file_location(f"ab_variant_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's on-disk cache finds a kernel's module by name
    spec.loader.exec_module(module)
    return module


def draw(sampler: RankBasedSampler, kernels: Kernels, seed: int) -> tuple[np.ndarray, ...]:
    """One draw of `BATCH` by the given sample kernel from fixed uniforms (no state changes)."""
    indices, weights = np.empty(BATCH, np.int64), np.empty(BATCH)
    probabilities = np.random.default_rng(seed).random(BATCH)
    scratch = np.empty(BATCH + sampler._groups, np.int64)
    kernels[0](*sampler._sampling, BETA, indices, probabilities, weights, scratch)
    return indices, probabilities, weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("variants", nargs="+", type=Path)
    parser.add_argument("--log2n", type=int, default=17)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--cycles", type=int, default=500)
    args = parser.parse_args()
    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    sampler = filled(RankBasedSampler(alpha=0.7), n, np.random.default_rng(1))
    order = sampler._ranks
    package: Kernels = (rank_sample_kernel, write_kernel)
    sets: dict[str, Kernels] = {"package": package}
    for path in args.variants:
        module = load(path)
        sets[path.stem] = (
            getattr(module, "rank_sample_kernel", rank_sample_kernel),
            getattr(module, "write_kernel", write_kernel),
        )
    sets["package (control)"] = package
    reference = draw(sampler, package, 5)
    for name, kernels in sets.items():
        drawn = draw(sampler, kernels, 5)
        if not all(np.array_equal(a, b) for a, b in zip(drawn, reference, strict=True)):
            raise SystemExit(f"{name}: its draw differs from the package's")

    indices, weights = np.empty(BATCH, np.int64), np.empty(BATCH)
    probabilities = np.empty(BATCH)
    scratch = np.empty(BATCH + sampler._groups, np.int64)

    def run(kernels: Kernels, news: np.ndarray) -> float:
        sample, write = kernels
        start = time.perf_counter()
        for magnitudes in news:
            rng.random(out=probabilities)
            sample(*sampler._sampling, BETA, indices, probabilities, weights, scratch)
            write(*order._state, indices, magnitudes, True, *order._scratch)
        return (time.perf_counter() - start) / news.shape[0] * 1e6

    for kernels in sets.values():  # compilation, caches
        run(kernels, np.abs(rng.standard_normal((args.cycles, BATCH))))
    times: dict[str, list[float]] = {name: [] for name in sets}
    for _ in range(args.rounds):
        for name, kernels in sets.items():
            times[name].append(run(kernels, np.abs(rng.standard_normal((args.cycles, BATCH)))))
    order.check_invariants()
    base = times["package"]
    print(f"N = 2^{args.log2n}, {args.rounds} rounds of {args.cycles} cycles, one sampler's state")
    for name, values in times.items():
        ratio = statistics.median([v / b for v, b in zip(values, base, strict=True)])
        print(f"{name:24s} {statistics.median(values):7.2f} µs/cycle  × package {ratio:.3f}")


if __name__ == "__main__":
    main()
