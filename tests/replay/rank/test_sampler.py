"""RankBasedSampler: the rank order is exact at every draw.

Regression tests for the periodic re-sort it replaced: in a full 32-slot buffer every draw was
slot 0, slots added since the last sort had P = 0, and after the ring wrapped a new transition
inherited the overwritten slot's last rank (P = 0.0038 instead of 0.095 for rank 1 of 100).
The expected order is always computed by hand: priorities descending, ties newest write first,
i.e. ``np.lexsort((-stamp, -priority))`` with one stamp per write, counted here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from rdqn.replay import RankBasedSampler
from rdqn.replay.rank.sampler import rank_cdf_kernel


class Reference:
    """The sampler's semantics in plain NumPy: priorities, stamps, lexsort order."""

    def __init__(self, capacity: int, alpha: float) -> None:
        self.priority = np.zeros(capacity)
        self.stamp = np.full(capacity, -1, np.int64)
        self.alpha = alpha
        self.clock = 0
        self.max_priority = 1.0

    def add(self, slot: int) -> None:
        self.clock += 1
        self.priority[slot], self.stamp[slot] = self.max_priority, self.clock

    def update(self, slots: np.ndarray, magnitudes: np.ndarray) -> None:
        """(Of stored slots: the sampler refuses others.)"""
        for slot, magnitude in zip(slots, magnitudes, strict=True):
            self.max_priority = max(self.max_priority, magnitude)
            self.clock += 1
            self.priority[slot], self.stamp[slot] = magnitude, self.clock

    def order(self) -> np.ndarray:
        stored = np.flatnonzero(self.stamp >= 0)
        return stored[np.lexsort((-self.stamp[stored], -self.priority[stored]))]

    def probabilities(self) -> np.ndarray:
        order = self.order()
        masses = np.arange(1, order.shape[0] + 1, dtype=np.float64) ** -self.alpha
        out = np.zeros(self.priority.shape[0])
        out[order] = masses / masses.sum()
        return out


def both(capacity: int, alpha: float) -> tuple[RankBasedSampler, Reference]:
    sampler = RankBasedSampler(alpha=alpha)
    sampler.attach(capacity)
    return sampler, Reference(capacity, alpha)


def test_a_full_buffer_draws_every_slot_not_only_slot_0() -> None:
    """The reported bug: 32 slots added one by one, then sampled, drew slot 0 every time."""
    sampler, _ = both(32, 0.7)
    for slot in range(32):
        sampler.on_add(slot)
    rng = np.random.default_rng(0)
    drawn = np.concatenate([sampler.sample(32, 32, 0.5, rng).indices for _ in range(20)])
    assert np.unique(drawn).shape[0] == 32


def test_a_new_item_is_rank_one_right_after_its_addition() -> None:
    """No other call in between: the new slot has the largest priority seen and the newest
    stamp. Slot 2 is also at the largest priority (5, set by an update), and older: rank 2."""
    sampler, ref = both(8, 1.0)
    for slot in range(5):
        sampler.on_add(slot)
        ref.add(slot)
    update = (np.array([0, 1, 2, 3, 4]), np.array([0.5, 2.0, 5.0, 1.0, 3.0]))
    sampler.update_priorities(*update)
    ref.update(*update)
    sampler.on_add(5)
    ref.add(5)
    assert sampler.order[:2].tolist() == [5, 2]
    harmonic = np.sum(1 / np.arange(1, 7))
    assert sampler.probabilities(6)[5] == pytest.approx(1 / harmonic, rel=1e-12)
    np.testing.assert_array_equal(sampler.order, ref.order())


def test_every_stored_slot_has_positive_probability_and_is_drawn() -> None:
    """24 slots, |delta| spanning 8 orders of magnitude, alpha 0.7: P(rank 24) is about 1/56,
    so 4,000 stratified draws reach every slot."""
    sampler, _ = both(32, 0.7)
    for slot in range(24):
        sampler.on_add(slot)
    rng = np.random.default_rng(1)
    sampler.update_priorities(np.arange(24), 10.0 ** rng.uniform(-6, 2, 24))
    probabilities = sampler.probabilities(24)
    assert (probabilities > 0).all()
    counts = np.zeros(24, np.int64)
    for _ in range(100):
        counts += np.bincount(sampler.sample(24, 40, 0.5, rng).indices, minlength=24)
    assert (counts > 0).all()


def test_a_million_draws_follow_the_exact_rank_probabilities() -> None:
    """64 slots with tied priorities (values in {0.5, 1, 2, 3}), alpha 0.7, after interleaved
    additions and updates; 10^6 stratified draws (1,000 batches of 1,000) against the P of the
    hand-computed lexsort order. Seeded: a correct sampler fails with probability < 0.1 %, while
    the order without the newest-first tie rule is rejected."""
    sampler, ref = both(64, 0.7)
    rng = np.random.default_rng(2)
    for slot in range(64):
        sampler.on_add(slot)
        ref.add(slot)
        if slot % 8 == 7:
            indices = rng.integers(0, slot + 1, 6)
            magnitudes = rng.choice([0.5, 1.0, 2.0, 3.0], 6)
            sampler.update_priorities(indices, magnitudes)
            ref.update(indices, magnitudes)
    expected = ref.probabilities()
    np.testing.assert_allclose(sampler.probabilities(64), expected, rtol=1e-12)
    counts = np.zeros(64, np.int64)
    for _ in range(1000):
        counts += np.bincount(sampler.sample(64, 1000, 0.5, rng).indices, minlength=64)
    assert counts.sum() == 10**6
    assert chisquare(counts, expected * 10**6).pvalue > 1e-3
    stored = np.arange(64)
    oldest_first = stored[np.lexsort((ref.stamp, -ref.priority))]
    wrong = np.zeros(64)
    wrong[oldest_first] = np.sort(expected)[::-1]
    assert not np.allclose(wrong, expected)
    assert chisquare(counts, wrong * 10**6).pvalue < 1e-6


def test_after_the_ring_wraps_the_new_transition_is_rank_one() -> None:
    """Capacity 100, full, then updated to |delta| in (0, 1); the 101st addition overwrites slot
    0 and is rank 1: P = 1 / H_{100, 0.7} = 0.0951..., not the overwritten slot's old rank."""
    sampler, ref = both(100, 0.7)
    for slot in range(100):
        sampler.on_add(slot)
        ref.add(slot)
    magnitudes = np.random.default_rng(3).uniform(0.01, 0.99, 100)
    magnitudes[0] = 0.001  # slot 0 is last (rank 100) before it is overwritten
    sampler.update_priorities(np.arange(100), magnitudes)
    ref.update(np.arange(100), magnitudes)
    assert sampler.order[-1] == 0
    sampler.on_add(0)
    ref.add(0)
    harmonic = np.sum(np.arange(1, 101) ** -0.7)
    assert sampler.order[0] == 0
    assert sampler.probabilities(100)[0] == pytest.approx(1 / harmonic, rel=1e-12)
    assert 1 / harmonic == pytest.approx(0.0951, abs=1e-4)
    np.testing.assert_array_equal(sampler.order, ref.order())


def test_four_items_by_hand(scripted: type) -> None:
    """alpha 1, |delta| [2, 5, 2, 1] in one update (slot 2 written after slot 0): order by
    (priority, newest) is slots [1, 2, 0, 3], ranks of slots 0..3 = [3, 1, 2, 4],
    P = [1/3, 1, 1/2, 1/4] / H_4 with H_4 = 25/12 -> [4, 12, 6, 3] / 25.
    B = 4, segment 25/48, u = [.5, .5, .5, .5]: queries .26, .78, 1.30, 1.82 fall in the CDF
    [1, 1.5, 1.833, 2.083] at ranks 1, 1, 2, 3 -> slots [1, 1, 2, 0]. Global weights, beta 1:
    P_min / P with P_min = 3/25 -> [1/4, 1/4, 1/2, 3/4]."""
    sampler, _ = both(4, 1.0)
    for slot in range(4):
        sampler.on_add(slot)
    sampler.update_priorities(np.arange(4), np.array([2.0, 5.0, 2.0, 1.0]))
    np.testing.assert_allclose(sampler.probabilities(4), np.array([4, 12, 6, 3]) / 25, rtol=1e-12)
    draw = sampler.sample(4, 4, 1.0, scripted([0.5, 0.5, 0.5, 0.5]))
    assert draw.indices.tolist() == [1, 1, 2, 0]
    np.testing.assert_allclose(draw.probabilities, np.array([12, 12, 6, 4]) / 25, rtol=1e-12)
    np.testing.assert_allclose(draw.weights, [0.25, 0.25, 0.5, 0.75], rtol=1e-12)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 19)),
        st.tuples(
            st.just("update"),
            st.lists(
                st.tuples(st.integers(0, 19), st.sampled_from([0.0, 0.5, 1.0, 2.0, 7.5])),
                max_size=12,
            ),
        ),
    ),
    max_size=60,
)


@settings(deadline=None, max_examples=150, derandomize=True)
@given(operations)
def test_random_adds_and_updates_match_the_lexsort_reference(ops: list) -> None:
    """Any sequence of additions and updates (duplicate indices in one update: the last one
    wins; an update that names an empty slot is refused whole) gives the reference order, and
    P sums to 1."""
    sampler, ref = both(20, 0.7)
    for kind, arg in ops:
        if kind == "add":
            sampler.on_add(arg)
            ref.add(arg)
        else:
            slots = np.array([slot for slot, _ in arg], np.int64)
            magnitudes = np.array([magnitude for _, magnitude in arg], np.float64)
            if (ref.stamp[slots] < 0).any():
                with pytest.raises(ValueError, match="indices must be"):
                    sampler.update_priorities(slots, magnitudes)
                continue
            sampler.update_priorities(slots, magnitudes)
            ref.update(slots, magnitudes)
    np.testing.assert_array_equal(sampler.order, ref.order())
    assert sampler.max_priority == ref.max_priority
    if ref.order().shape[0]:
        probabilities = sampler.probabilities(20)
        np.testing.assert_allclose(probabilities, ref.probabilities(), rtol=1e-12, atol=0)
        assert probabilities.sum() == pytest.approx(1.0, abs=1e-12)


def drive(sampler: RankBasedSampler, seed: int, steps: int) -> list:
    rng = np.random.default_rng(seed)
    draws = []
    for step in range(steps):
        sampler.on_add(step % 16)
        draw = sampler.sample(min(step + 1, 16), 8, 0.5, rng)
        sampler.update_priorities(draw.indices, rng.choice([0.25, 1.0, 3.0], 8))
        draws.append(draw)
    return draws


def test_state_dict_round_trip_continues_identically(assert_same_state: Callable) -> None:
    original, _ = both(16, 0.7)
    drive(original, 4, 40)
    state = original.state_dict()
    assert set(state) == {
        "name",
        "alpha",
        "max_priority",
        "stored",
        "priorities",
        "stamps",
        "clock",
    }
    copy, _ = both(16, 0.7)
    copy.load_state_dict(state)
    assert_same_state(copy.state_dict(), state)
    np.testing.assert_array_equal(copy.order, original.order)
    for a, b in zip(drive(original, 5, 30), drive(copy, 5, 30), strict=True):
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.weights, b.weights)


def test_a_state_saved_by_the_periodic_sort_sampler_loads() -> None:
    """Stored checkpoints of stopped runs hold the old keys ("order", "stored", "changes"). Slots
    [0, stored) are stored; stamps stored - slot keep the old tie rule (lower slot first), and
    the next addition is newer than all of them."""
    old = {
        "name": "rank",
        "alpha": 0.7,
        "max_priority": 3.0,
        "priorities": np.array([1.0, 3.0, 1.0, 2.0, 0.0, 0.0]),
        "order": np.array([1, 3, 0, 2]),
        "stored": 4,
        "changes": 2,
    }
    sampler, _ = both(6, 0.7)
    sampler.load_state_dict(old)
    assert sampler.order.tolist() == [1, 3, 0, 2]
    assert sampler.max_priority == 3.0
    np.testing.assert_array_equal(sampler.state_dict()["stamps"], [4, 3, 2, 1, -1, -1])
    sampler.on_add(4)
    assert sampler.order.tolist() == [4, 1, 3, 0, 2]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda s: s.update_priorities(np.array([0, 16]), np.array([1.0, 1.0])), "indices"),
        (lambda s: s.update_priorities(np.array([0, -1]), np.array([1.0, 1.0])), "indices"),
        (lambda s: s.update_priorities(np.array([0, 1]), np.array([1.0, np.nan])), "magnitudes"),
        (lambda s: s.update_priorities(np.array([0, 1]), np.array([1.0, -2.0])), "magnitudes"),
        (lambda s: s.update_priorities(np.array([3, 1]), np.array([np.inf, 1.0])), "magnitudes"),
        (lambda s: s.update_priorities(np.array([0.5]), np.array([1.0])), "indices"),
        (lambda s: s.on_add(16), "slot"),
        (lambda s: s.load_state_dict({"name": "rank", "alpha": 0.5}), "alpha"),
    ],
)
def test_bad_input_is_refused_and_leaves_the_state_unchanged(
    call: Callable[[RankBasedSampler], None], match: str, assert_same_state: Callable
) -> None:
    sampler, _ = both(16, 0.7)
    drive(sampler, 6, 20)
    before = sampler.state_dict()
    with pytest.raises(ValueError, match=match):
        call(sampler)
    assert_same_state(sampler.state_dict(), before)


def test_sampling_before_any_transition_is_stored_is_refused() -> None:
    sampler = RankBasedSampler()
    sampler.attach(8)
    with pytest.raises(ValueError, match="no transition is stored"):
        sampler.sample(0, 4, 0.5, np.random.default_rng(0))
    sampler.on_add(3)
    assert sampler.sample(1, 4, 0.5, np.random.default_rng(0)).indices.tolist() == [3, 3, 3, 3]


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.7, 1.0 - 5e-5, 1.0, 1.5, 5.0])
def test_each_query_draws_the_first_rank_whose_prefix_sum_exceeds_it(
    alpha: float, scripted: Callable[..., Any]
) -> None:
    """The closed-form guess of a query's rank, checked against the exact prefix sums, gives
    what a binary search of them gives: rank j (0-based) for m in [S(j), S(j + 1)), capped at
    the last stored rank; for both forms of the inverse (near alpha = 1 and not), a CDF that
    float64 saturates (alpha = 5), queries on a segment's lower edge (u = 0) and at its top."""
    capacity, batch = 4096, 64
    cdf = np.empty(capacity)
    rank_cdf_kernel(alpha, cdf)
    rng = np.random.default_rng(int(alpha * 1000))
    for n in (1, 2, 37, capacity):
        sampler = RankBasedSampler(alpha=alpha)
        sampler.attach(capacity)
        for slot in range(n):
            sampler.on_add(slot)
        sampler.update_priorities(np.arange(n), rng.random(n))
        rank_of = np.empty(n, np.int64)
        rank_of[sampler.order] = np.arange(n)
        for u in (rng.random(batch), np.zeros(batch), np.full(batch, 1.0 - 2.0**-53)):
            queries = (np.arange(batch) + u) * (cdf[n - 1] / batch)
            expected = np.minimum(np.searchsorted(cdf[:n], queries, side="right"), n - 1)
            draw = sampler.sample(n, batch, 0.5, scripted(u))
            assert rank_of[draw.indices].tolist() == expected.tolist()
        # One query at a time, ever closer to the total: where the prefix sums of far ranks
        # round to the same float64 (alpha > 1), the guess can be far off and a binary search
        # takes over.
        for u in 1.0 - 2.0 ** -np.arange(20.0, 54.0):
            expected = min(np.searchsorted(cdf[:n], u * cdf[n - 1], side="right"), n - 1)
            draw = sampler.sample(n, 1, 0.5, scripted([u]))
            assert rank_of[draw.indices[0]] == expected, u
