"""Peer-venv worker of the replay benchmark: times the peer adapters on command, or checks them.

Run from the repository root with the peer venv's Python (see `benchmarks/peers/setup.sh`):

    .venv-peers/bin/python -m benchmarks.peers.driver --check    # each adapter against the oracle
    .venv-peers/bin/python -m benchmarks.peers.driver --serve    # what bench_replay starts

`--serve` reads one JSON command per line on stdin and answers one JSON line on stdout:
  {"cmd": "setup", "log2n": [14, 17, 20]} -> {"ok", "impls": [{"name", "slow", "log2n"}],
                                              "unavailable", "versions"} (builds, warms up)
  {"cmd": "time", "impl": NAME, "log2n": K, "calls": C} -> {"ok", "seconds"} (per cycle)
  {"cmd": "quit"}
A failed command answers {"ok": false, "error": ...}. Whatever the libraries print goes to
stderr, so stdout carries only the protocol.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import sys
import traceback
from collections.abc import Callable

import numpy as np

from .adapters import CpprbBuffer, peers
from .protocol import (
    BATCH,
    delta_sets,
    draw_mismatches,
    initial_magnitudes,
    leaf_mass,
    oracle_write,
    seconds_per_cycle,
    stratum_mismatches,
)

PACKAGES = ("torch", "torchrl", "tensordict", "tianshou", "cpprb", "numpy", "numba")


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            out[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out


class Worker:
    """Implementations built at each size, their TD errors, and the commands that time them.

    `factories` maps a name to a callable n -> implementation (with `cycle(deltas)`, optional
    `prepare_deltas`, `slow` and `max_log2n`). bench_replay runs one in its own process for the
    main environment; `--serve` runs one over the peer adapters.
    """

    def __init__(self, factories: dict[str, Callable[[int], object]]) -> None:
        self.factories = factories
        self.instances: dict[tuple[str, int], object] = {}
        self.deltas: dict[tuple[str, int], list] = {}

    def setup(self, log2n: list[int]) -> dict:
        impls, unavailable = [], {}
        for name, factory in self.factories.items():
            sizes = [k for k in log2n if k <= getattr(factory, "max_log2n", max(log2n))]
            try:
                for k in sizes:
                    impl = factory(1 << k)
                    deltas = delta_sets()
                    if hasattr(impl, "prepare_deltas"):
                        deltas = impl.prepare_deltas(deltas)
                    impl.cycle(deltas[0])  # warm-up: compilation, first touch of the pages
                    self.instances[name, k], self.deltas[name, k] = impl, deltas
            except Exception as error:  # an implementation that cannot load is reported
                unavailable[name] = f"{type(error).__name__}: {error}"
                continue
            impls.append({"name": name, "slow": getattr(factory, "slow", False), "log2n": sizes})
        return {"impls": impls, "unavailable": unavailable}

    def time(self, impl: str, log2n: int, calls: int) -> dict:
        instance = self.instances[impl, log2n]
        return {"seconds": seconds_per_cycle(instance.cycle, self.deltas[impl, log2n], calls)}


def _single_thread() -> None:
    """One torch thread, as the project's learner runs (128-element ops never parallelize)."""
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass


def serve() -> None:
    protocol_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # library output (C or Python) goes to stderr from here on
    sys.stdout = sys.stderr
    _single_thread()
    worker = Worker(peers())
    for line in sys.stdin:
        command = json.loads(line)
        if command["cmd"] == "quit":
            break
        try:
            if command["cmd"] == "setup":
                answer = worker.setup(command["log2n"]) | {"versions": versions()}
            elif command["cmd"] == "time":
                answer = worker.time(command["impl"], command["log2n"], command["calls"])
            else:
                raise ValueError(f"cmd must be 'setup', 'time' or 'quit', got {command['cmd']!r}")
            answer["ok"] = True
        except Exception as error:
            answer = {"ok": False, "error": f"{type(error).__name__}: {error}"}
            traceback.print_exc()
        protocol_out.write(json.dumps(answer) + "\n")


def check(cycles: int = 3) -> list[str]:
    """Every adapter against the oracle on small trees; returns the failures ([] = all agree)."""
    failures = []
    rng = np.random.default_rng(7)
    for n in (256, 1 << 14):
        for name, factory in peers().items():
            if name.startswith("cpprb"):
                continue
            try:
                impl = factory(n)
            except Exception as error:
                failures.append(f"{name}: cannot build ({type(error).__name__}: {error})")
                continue
            rtol = 1e-9 if "Fp64" in name or "numba" in name else 1e-5
            leaves = leaf_mass(initial_magnitudes(n))
            for _ in range(cycles):
                u, deltas = rng.random(BATCH), rng.standard_normal(BATCH)
                indices, probabilities = impl.draw(u, deltas)
                for problem in draw_mismatches(leaves, u, indices, probabilities, rtol):
                    failures.append(f"{name}, N = {n}: {problem}")
                leaves = oracle_write(leaves, np.asarray(indices), deltas)
        failures += _check_cpprb(n, rng, cycles)
    return failures


def _check_cpprb(n: int, rng: np.random.Generator, cycles: int) -> list[str]:
    name = "cpprb PrioritizedReplayBuffer (C++)"
    try:
        impl = CpprbBuffer(n)
    except Exception as error:
        return [f"{name}: cannot build ({type(error).__name__}: {error})"]
    failures = []
    leaves = leaf_mass(initial_magnitudes(n))
    for _ in range(cycles):
        sample = impl.sample()
        indices = sample["indexes"].astype(np.int64)
        for problem in stratum_mismatches(leaves, indices, sample["weights"], rtol=1e-4):
            failures.append(f"{name}, N = {n}: {problem}")
        deltas = rng.standard_normal(BATCH)
        impl.buffer.update_priorities(sample["indexes"], np.abs(deltas))
        leaves = oracle_write(leaves, indices, deltas)
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--serve", action="store_true", help="answer JSON commands on stdin")
    mode.add_argument("--check", action="store_true", help="check every adapter, then exit")
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    failures = check()
    print(json.dumps(versions()))
    for failure in failures:
        print("FAIL", failure)
    names = "; ".join(peers())
    print(f"{len(failures)} failure(s); checked: {names}" if failures else f"all agree: {names}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
