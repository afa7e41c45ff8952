"""The formulas, each written once (`rdqn.replay.priorities`), and every kernel that applies them
held to them: the compiled twins are the same functions; the vectorized mass of a batch
(libmvec's `power`) is within its 4-ulp contract of `mass`; the scalar ones are exact."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.classroom.tree_demo import masses
from rdqn.replay import ProportionalSampler, RankBasedSampler, priorities
from rdqn.replay.kernels import compiled
from rdqn.replay.kernels.compiled import POWER_ULPS
from rdqn.replay.priorities import mass, priority, rank_priority, sequence_priority
from rdqn.replay.rank.sampler import rank_cdf_kernel


def assert_within_ulps(actual: np.ndarray, expected: np.ndarray) -> None:
    """Each actual value within libmvec's contract (`POWER_ULPS`) of the expected; 0 exactly."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert np.array_equal(actual == 0.0, expected == 0.0)
    ulps = np.abs(actual - expected) / np.spacing(np.abs(expected))
    assert ulps.max(initial=0.0) <= POWER_ULPS, (actual, expected)


def test_the_formulas_by_hand() -> None:
    """p = |delta| + eps, m = p^alpha, rank-based p = 1/rank; on numbers and arrays alike."""
    assert priority(-2.0, 0.5) == 2.5
    assert priority(3.0, 0.0) == 3.0
    assert mass(4.0, 0.5) == 2.0
    assert mass(0.0, 0.0) == 1.0  # alpha = 0: every mass 1, exactly uniform
    assert mass(7.0, 1.0) == 7.0
    assert rank_priority(4.0) == 0.25
    np.testing.assert_array_equal(priority(np.array([-1.0, 0.0, 2.0]), 0.25), [1.25, 0.25, 2.25])
    np.testing.assert_array_equal(mass(np.array([1.0, 4.0, 9.0]), 0.5), [1.0, 2.0, 3.0])


def test_the_sequence_priority_by_hand() -> None:
    """R2D2's eta-mixed priority over the marked steps only. Row 0: |delta| 1, 3, 2 marked
    (the 99 is padding): max 3, mean 2, eta .9: .9 * 3 + .1 * 2 = 2.9. Row 1: signs dropped,
    the burn-in step (-8) unmarked: |delta| 4, 1: max 4, mean 2.5: 3.6 + .25 = 3.85. Row 2,
    one step: 0.5. eta 1 is the max, eta 0 the mean."""
    td = np.array([[1.0, 3.0, 2.0, 99.0], [-8.0, -4.0, 1.0, 0.0], [0.5, 0.0, 0.0, 0.0]])
    mask = np.array(
        [[True, True, True, False], [False, True, True, False], [True, False, False, False]]
    )
    np.testing.assert_allclose(sequence_priority(td, mask, 0.9), [2.9, 3.85, 0.5], rtol=1e-15)
    np.testing.assert_allclose(sequence_priority(td, mask, 1.0), [3.0, 4.0, 0.5])
    np.testing.assert_allclose(sequence_priority(td, mask, 0.0), [2.0, 2.5, 0.5])


def test_the_kernels_compile_the_same_functions() -> None:
    for name in ("priority", "mass", "rank_priority"):
        assert getattr(compiled, name).py_func is getattr(priorities, name), name


@settings(max_examples=60, deadline=None)
@given(
    magnitudes=st.lists(st.floats(0.0, 1e6), min_size=1, max_size=40),
    eps=st.sampled_from([0.0, 1e-6, 0.01, 1.0]),
    alpha=st.sampled_from([0.0, 0.3, 0.6, 1.0, 1.7]),
)
def test_the_proportional_masses_are_the_formula(
    magnitudes: list[float], eps: float, alpha: float
) -> None:
    """The tree's leaves after an update: `mass(priority(|delta|, eps), alpha)` (the batch's by
    one vector `power`, within libmvec's contract); a new slot's: the largest priority's mass,
    exactly."""
    n = len(magnitudes)
    sampler = ProportionalSampler(alpha=alpha, eps=eps)
    sampler.attach(n + 1)
    for slot in range(n):
        sampler.on_add(slot)
    expected = np.array([mass(priority(m, eps), alpha) for m in magnitudes])
    if not expected.any():
        return  # refused: nothing could be drawn (tests/replay/test_samplers.py)
    sampler.update_priorities(np.arange(n), np.array(magnitudes))
    assert sampler.tree is not None
    assert_within_ulps(sampler.tree.leaves(n), expected)
    sampler.on_add(n)
    assert sampler.tree[n] == mass(max(1.0, *(priority(m, eps) for m in magnitudes)), alpha)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 0.7, 1.0, 2.5])
def test_the_rank_masses_are_the_formula(alpha: float) -> None:
    """Rank r's mass is `mass(rank_priority(r), alpha)`: the prefix sums and P(i) exactly (the
    same scalar functions, compiled), a sample's P within libmvec's contract."""
    n = 50
    cdf = np.empty(n)
    rank_cdf_kernel(alpha, cdf)
    expected_masses = [mass(rank_priority(float(r)), alpha) for r in range(1, n + 1)]
    np.testing.assert_array_equal(cdf, np.cumsum(expected_masses))  # summed in the same order
    sampler = RankBasedSampler(alpha=alpha)
    sampler.attach(n)
    for slot in range(n):
        sampler.on_add(slot)
    sampler.update_priorities(np.arange(n), np.arange(n, 0, -1.0))  # slot k at rank k + 1
    total = cdf[-1]
    np.testing.assert_array_equal(sampler.probabilities(n), np.array(expected_masses) / total)
    draw = sampler.sample(n, 16, 0.5, np.random.default_rng(0))
    vectorized = draw.probabilities * total  # up to the division's rounding, the batch's masses
    np.testing.assert_allclose(
        vectorized, [expected_masses[i] for i in draw.indices], rtol=8 * 2.0**-52, atol=0
    )


def test_the_classroom_uses_the_formula() -> None:
    np.testing.assert_array_equal(masses([0.0, 2.0, 9.0], 0.5), mass(np.array([0, 2, 9.0]), 0.5))
