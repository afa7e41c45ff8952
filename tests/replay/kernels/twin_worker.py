"""Replay scenarios run on one process's kernel path, for the tests that hold the fast paths and
their plain twins to the same draws (tests/replay/kernels/test_compiled.py).

A test runs a scenario in its own process (the path `rdqn.replay.kernels.compiled` chose there)
and hands it to a process of this module started on a plain path (``RDQN_PLAIN_KERNELS``), which
runs the same scenario: ``python -m tests.replay.kernels.twin_worker`` answers each pickled
scenario on stdin with its pickled results (its path's tag first) on stdout, until stdin closes.

A scenario: a sampler (rank or proportional, alpha, IS normalisation, weight cap) attached to a
capacity, then steps: ("add", count) adds the next slots of the ring; ("update", seed, count,
ties) gives `count` stored slots new |delta| (from a few values, so ties, where `ties`);
("sample", seed, batch, beta) draws a batch (its slots, P and IS weights); ("find", seed, count)
descends the proportional sampler's sum tree for `count` masses. At the end, P(i) of every
stored slot, and the priorities and rank order of a rank sampler or the masses of a
proportional one.
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

import numpy as np

from rdqn.replay import ProportionalSampler, RankBasedSampler
from rdqn.replay.kernels.compiled import PATH

Scenario = dict[str, Any]


def run_scenario(scenario: Scenario) -> list[np.ndarray]:
    """The arrays the scenario's sampler returns, in the order of its steps."""
    if scenario["scheme"] == "rank":
        sampler: Any = RankBasedSampler(
            scenario["alpha"], scenario["normalization"], scenario["max_weight"]
        )
    else:
        sampler = ProportionalSampler(
            scenario["alpha"], 1e-6, scenario["normalization"], scenario["max_weight"]
        )
    capacity = scenario["capacity"]
    sampler.attach(capacity)
    added = 0
    out: list[np.ndarray] = []
    for step in scenario["steps"]:
        kind, *args = step
        if kind == "add":
            for _ in range(args[0]):
                sampler.on_add(added % capacity)
                added += 1
        elif sampler.stored == 0:
            continue
        elif kind == "update":
            seed, count, ties = args
            rng = np.random.default_rng(seed)
            slots = rng.integers(0, sampler.stored, count)
            magnitudes = rng.choice([0.0, 0.5, 2.0], count) if ties else rng.exponential(1, count)
            sampler.update_priorities(slots, magnitudes)
        elif kind == "sample":
            seed, batch, beta = args
            draw = sampler.sample(sampler.stored, batch, beta, np.random.default_rng(seed))
            out += [draw.indices, draw.probabilities, draw.weights]
        elif kind == "find" and scenario["scheme"] == "proportional":
            seed, count = args
            masses = np.sort(np.random.default_rng(seed).random(count)) * sampler.tree.total
            out.append(sampler.tree.find(masses))
    if sampler.stored == 0:
        return out
    out.append(sampler.probabilities(capacity))
    if scenario["scheme"] == "rank":
        out += [np.asarray(sampler.priorities), np.asarray(sampler.order)]
    else:
        out.append(sampler.tree.leaves(capacity))
    return out


def main() -> None:
    """Answer scenarios on stdin until it closes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            scenario = pickle.load(stdin)
        except EOFError:
            return
        pickle.dump((PATH.tag, run_scenario(scenario)), stdout)
        stdout.flush()


if __name__ == "__main__":
    main()
