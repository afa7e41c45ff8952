"""The replay benchmark's self-check: its main-environment implementations do the protocol's
cycle, exactly. Run it before publishing `bench_replay` figures:

    python -m pytest benchmarks/test_bench_replay.py

rdqn's ProportionalSampler and the NumPy references are checked against the prefix-sum oracle
of `benchmarks.peers.protocol` (same masses -> same leaves and P(i), then the same write); the
peer libraries are checked by `.venv-peers/bin/python -m benchmarks.peers.driver --check`.
It checks the benchmark, not rdqn (the replay tests check the sampler itself), so it lives
here, outside the test suite: tests do not import `benchmarks`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.bench_replay import RdqnSampler, cycle_table, start_peers
from benchmarks.peers.numpy_references import REFERENCES
from benchmarks.peers.protocol import (
    BATCH,
    draw_mismatches,
    initial_magnitudes,
    leaf_mass,
    oracle_draw,
    oracle_write,
)

IMPLEMENTATIONS = {"rdqn ProportionalSampler": RdqnSampler, **REFERENCES}


@pytest.mark.parametrize("n", [128, 1024])
@pytest.mark.parametrize("name", list(IMPLEMENTATIONS))
def test_same_leaves_and_probabilities_as_the_oracle_over_cycles(name: str, n: int) -> None:
    impl = IMPLEMENTATIONS[name](n)
    leaves = leaf_mass(initial_magnitudes(n))
    rng = np.random.default_rng(3)
    for _ in range(4):  # later cycles see the earlier writes
        u, deltas = rng.random(BATCH), rng.standard_normal(BATCH)
        indices, probabilities = impl.draw(u, deltas)
        assert draw_mismatches(leaves, u, indices, probabilities, rtol=1e-9) == []
        expected, _ = oracle_draw(leaves, u)
        assert np.array_equal(indices, expected)  # random u: no mass lands on a boundary
        leaves = oracle_write(leaves, expected, deltas)


def test_the_oracle_check_catches_wrong_leaves_and_probabilities() -> None:
    leaves = leaf_mass(initial_magnitudes(512))
    u = np.random.default_rng(4).random(BATCH)
    indices, probabilities = oracle_draw(leaves, u)
    assert draw_mismatches(leaves, u, indices, probabilities, rtol=1e-9) == []
    assert draw_mismatches(leaves, u, indices[::-1], probabilities, rtol=1e-9)  # unsorted
    assert draw_mismatches(leaves, u, np.minimum(indices + 1, 511), probabilities, rtol=1e-9)
    assert draw_mismatches(leaves, u, indices, probabilities * 1.001, rtol=1e-9)


def test_the_oracle_puts_one_mass_in_each_stratum_of_equal_leaves() -> None:
    indices, probabilities = oracle_draw(np.ones(BATCH), np.full(BATCH, 0.5))
    assert np.array_equal(indices, np.arange(BATCH))
    assert np.allclose(probabilities, 1 / BATCH)


def test_a_missing_peer_venv_is_reported_with_how_to_create_it(tmp_path: Path) -> None:
    peer, status = start_peers(tmp_path / "no-venv" / "bin" / "python", [10])
    assert peer is None and status["status"] == "missing"
    assert "NOT measured" in status["message"] and "benchmarks/peers/setup.sh" in status["message"]
    cycle = {
        "log2n": [10],
        "median_us": {"rdqn ProportionalSampler": {"2^10": 10.0}},
        "environment": {"rdqn ProportionalSampler": "main"},
        "fastest_peer": {},
        "peers": status,
    }
    table = cycle_table(cycle)
    assert "**10.0** | 1.0" in table and "benchmarks/peers/setup.sh" in table
