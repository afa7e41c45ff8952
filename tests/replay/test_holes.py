"""Removed items (`Sampler.on_remove`, `rdqn.replay.holes`): a removed slot is never drawn,
its P(i) is 0, N counts the items left, an update of it is refused, and a write brings it back;
the distributions over the items left (chi-square), IS weights by hand, state round trips and
refused states."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy.stats import chisquare

from rdqn.replay import ProportionalSampler, RankBasedSampler, Sampler, UniformSampler
from rdqn.replay.state_checks import ReplayStateError

P_ACCEPT = 1e-3
P_REJECT = 1e-6

FACTORIES: dict[str, Callable[[], Sampler]] = {
    "uniform": UniformSampler,
    "proportional": lambda: ProportionalSampler(alpha=0.6, eps=1e-3),
    "rank": lambda: RankBasedSampler(alpha=0.7),
}


@pytest.fixture(params=list(FACTORIES))
def make_sampler(request: pytest.FixtureRequest) -> Callable[[], Sampler]:
    return FACTORIES[request.param]


def filled(sampler: Sampler, capacity: int, size: int) -> Sampler:
    sampler.attach(capacity)
    for slot in range(size):
        sampler.on_add(slot)
    return sampler


def counts_of(sampler: Sampler, size: int, batch: int, rounds: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    counts = np.zeros(size, np.int64)
    for _ in range(rounds):
        counts += np.bincount(sampler.sample(size, batch, 0.5, rng).indices, minlength=size)
    return counts


def chi_square_p(counts: np.ndarray, expected: np.ndarray) -> float:
    """The p-value of the counts under P (zero cells, which P gives no mass, left out)."""
    held = expected > 0
    return float(chisquare(counts[held], expected[held] * counts.sum()).pvalue)


def test_removed_slots_are_never_drawn_and_come_back_when_written(
    make_sampler: Callable[[], Sampler],
) -> None:
    sampler = filled(make_sampler(), 16, 10)
    sampler.update_priorities(np.arange(10), np.linspace(0.1, 2.0, 10))
    for slot in (2, 5, 9):
        sampler.on_remove(slot)
    probabilities = sampler.probabilities(10)
    assert (probabilities[[2, 5, 9]] == 0).all()
    assert (probabilities[[0, 1, 3, 4, 6, 7, 8]] > 0).all()
    assert probabilities.sum() == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(200):
        draw = sampler.sample(10, 16, 0.5, rng)
        assert not np.isin(draw.indices, [2, 5, 9]).any()
        np.testing.assert_allclose(draw.probabilities, probabilities[draw.indices], rtol=1e-12)
    with pytest.raises(ValueError, match="slot 5 was removed"):
        sampler.update_priorities(np.array([1, 5]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="slot 5 holds no item"):
        sampler.on_remove(5)
    with pytest.raises(ValueError, match=r"slot must be an integer in \[0, 10\)"):
        sampler.on_remove(10)
    sampler.on_add(5)  # a new item: drawable again (the largest priority, or uniform's 1/n)
    assert sampler.probabilities(10)[5] > 0
    sampler.update_priorities(np.array([5]), np.array([1.0]))
    for slot in (0, 1, 3, 4, 5, 6, 7, 8):
        sampler.on_remove(slot)
    with pytest.raises(ValueError, match="cannot sample"):
        sampler.sample(10, 4, 0.5, rng)


def test_with_removed_slots_a_draw_covers_every_stored_slot(
    make_sampler: Callable[[], Sampler],
) -> None:
    """N in the IS weights counts the items left among all stored slots: a draw of fewer
    slots than are stored would count them wrong, and is refused."""
    sampler = filled(make_sampler(), 16, 10)
    sampler.on_remove(3)
    with pytest.raises(ValueError, match="size must be the 10 stored slots when 1 of them"):
        sampler.sample(8, 4, 0.5, np.random.default_rng(0))


def test_uniform_over_the_items_left() -> None:
    sampler = filled(UniformSampler(), 16, 12)
    for slot in (0, 4, 11):
        sampler.on_remove(slot)
    expected = np.where(np.isin(np.arange(12), [0, 4, 11]), 0.0, 1 / 9)
    np.testing.assert_array_equal(sampler.probabilities(12), expected)
    counts = counts_of(sampler, 12, 32, 1000, seed=1)
    assert counts[[0, 4, 11]].sum() == 0
    assert chi_square_p(counts, expected) > P_ACCEPT
    assert chi_square_p(counts, np.full(12, 1 / 12)) < P_REJECT
    draw = sampler.sample(12, 4, 1.0, np.random.default_rng(2))
    np.testing.assert_array_equal(draw.probabilities, np.full(4, 1 / 9))


def test_proportional_over_the_items_left() -> None:
    """P(i) = p_i^alpha / sum_{k held} p_k^alpha: slot 7 (the largest) removed."""
    priorities = np.array([0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0])
    sampler = filled(ProportionalSampler(alpha=0.6, eps=0.0), 8, 8)
    sampler.update_priorities(np.arange(8), priorities)
    sampler.on_remove(7)
    masses = np.where(np.arange(8) == 7, 0.0, priorities**0.6)
    expected = masses / masses.sum()
    np.testing.assert_allclose(sampler.probabilities(8), expected, rtol=1e-12)
    counts = counts_of(sampler, 8, 32, 1000, seed=3)
    assert counts[7] == 0
    assert chi_square_p(counts, expected) > P_ACCEPT
    with_seven = priorities**0.6 / np.sum(priorities**0.6)  # as if slot 7 were still held
    assert chi_square_p(counts, with_seven) < P_REJECT


def test_rank_over_the_items_left() -> None:
    """Slots 0-11 with priorities 12, 11, ..., 1 (slot 0 rank 1); slots 0 and 5 removed: the
    ten left take ranks 1..10 in the same order, P = r^-0.7 / sum_{k <= 10} k^-0.7."""
    sampler = filled(RankBasedSampler(alpha=0.7), 12, 12)
    sampler.update_priorities(np.arange(12), 12.0 - np.arange(12))
    sampler.on_remove(0)
    sampler.on_remove(5)
    left = np.array([1, 2, 3, 4, 6, 7, 8, 9, 10, 11])
    expected = np.zeros(12)
    expected[left] = np.arange(1, 11) ** -0.7 / np.sum(np.arange(1, 11) ** -0.7)
    np.testing.assert_allclose(sampler.probabilities(12), expected, rtol=1e-12)
    counts = counts_of(sampler, 12, 16, 2000, seed=4)
    assert counts[[0, 5]].sum() == 0
    assert chi_square_p(counts, expected) > P_ACCEPT
    # The ranks the removed slots held are gone, not left empty: with them, slot 1 would be
    # rank 2 and every P lower.
    stale = np.zeros(12)
    stale[left] = np.array([2, 3, 4, 5, 7, 8, 9, 10, 11, 12]) ** -0.7
    assert chi_square_p(counts, stale / stale.sum()) < P_REJECT


def test_is_weights_by_hand_with_a_removed_slot() -> None:
    """Masses [1, 2, 3, 4] (alpha 1, eps 0), slot 3 removed: P = [1/6, 2/6, 3/6], N = 3.
    beta = 1: "none" w = (N P)^-1 = [2, 1, 2/3]; "global" w = (P / P_min)^-1 = [1, 1/2, 1/3].
    Rank, priorities [4, 3, 2, 1], slot 0 removed: ranks 1, 2, 3 for slots 1, 2, 3; alpha 1,
    beta 1, global: w = (P / P_min)^-1 = (r^-1 / 3^-1)^-1 = r / 3."""
    for mode, expected in (("none", [2.0, 1.0, 2 / 3]), ("global", [1.0, 0.5, 1 / 3])):
        sampler = filled(ProportionalSampler(alpha=1.0, eps=0.0, is_normalization=mode), 4, 4)
        sampler.update_priorities(np.arange(4), np.array([1.0, 2.0, 3.0, 4.0]))
        sampler.on_remove(3)
        draw = sampler.sample(4, 300, 1.0, np.random.default_rng(5))
        assert set(draw.indices.tolist()) == {0, 1, 2}
        np.testing.assert_allclose(draw.weights, np.array(expected)[draw.indices], rtol=1e-12)
    rank = filled(RankBasedSampler(alpha=1.0), 4, 4)
    rank.update_priorities(np.arange(4), np.array([4.0, 3.0, 2.0, 1.0]))
    rank.on_remove(0)
    draw = rank.sample(4, 300, 1.0, np.random.default_rng(6))
    assert set(draw.indices.tolist()) == {1, 2, 3}
    np.testing.assert_allclose(draw.probabilities, (1 / draw.indices) / (1 + 1 / 2 + 1 / 3))
    np.testing.assert_allclose(draw.weights, draw.indices / 3, rtol=1e-12)


def test_state_round_trip_with_removed_slots(
    make_sampler: Callable[[], Sampler], assert_same_state: Callable
) -> None:
    original = filled(make_sampler(), 16, 16)
    original.update_priorities(np.arange(16), np.random.default_rng(7).exponential(1.0, 16))
    for slot in (1, 8, 15):
        original.on_remove(slot)
    state = original.state_dict()
    np.testing.assert_array_equal(state["removed"], [1, 8, 15])
    copy = make_sampler()
    copy.attach(16)
    copy.load_state_dict(state)
    assert_same_state(copy.state_dict(), state)
    a = original.sample(16, 32, 0.5, np.random.default_rng(8))
    b = copy.sample(16, 32, 0.5, np.random.default_rng(8))
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.weights, b.weights)
    with pytest.raises(ValueError, match="slot 8 was removed"):
        copy.update_priorities(np.array([8]), np.array([1.0]))


def test_a_sampler_that_never_removed_saves_no_removed_entry(
    make_sampler: Callable[[], Sampler],
) -> None:
    """A memory of transitions never removes: its samplers' states are what they were."""
    sampler = filled(make_sampler(), 8, 8)
    assert "removed" not in sampler.state_dict()
    sampler.on_remove(2)
    sampler.on_add(2)
    assert "removed" not in sampler.state_dict()


@pytest.mark.parametrize(
    ("removed", "match"),
    [
        (np.array([3, 1]), "distinct and ascending"),
        (np.array([1, 1]), "distinct and ascending"),
        (np.array([16]), "below stored=10"),
        (np.array([1.0]), "int64"),
        ([1], "int64"),
    ],
)
def test_a_malformed_removed_entry_is_refused(
    make_sampler: Callable[[], Sampler], removed: object, match: str
) -> None:
    sampler = filled(make_sampler(), 16, 10)
    sampler.on_remove(1)
    sampler.on_remove(3)
    state = sampler.state_dict()
    state["removed"] = removed
    fresh = make_sampler()
    fresh.attach(16)
    with pytest.raises(ReplayStateError, match=match):
        fresh.load_state_dict(state)


def test_a_removed_slot_that_holds_an_item_is_refused() -> None:
    """The removed slots must be exactly the empty ones: a proportional leaf with a mass, or a
    rank slot with a stamp, that the state calls removed."""
    proportional = filled(ProportionalSampler(alpha=1.0, eps=0.0), 8, 8)
    proportional.on_remove(2)
    state = proportional.state_dict()
    state["removed"] = np.array([2, 4])
    fresh = ProportionalSampler(alpha=1.0, eps=0.0)
    fresh.attach(8)
    with pytest.raises(ReplayStateError, match="slot 4 the mass 1.0, but slot 4 was removed"):
        fresh.load_state_dict(state)
    rank = filled(RankBasedSampler(), 8, 8)
    rank.on_remove(2)
    state = rank.state_dict()
    state["removed"] = np.array([4])
    fresh_rank = RankBasedSampler()
    fresh_rank.attach(8)
    with pytest.raises(ReplayStateError, match=r"without a transition, but removed names \[4\]"):
        fresh_rank.load_state_dict(state)
    del state["removed"]  # and without the entry, the empty slot 2 is refused
    with pytest.raises(ReplayStateError, match="slot 2 below stored=8 holds no transition"):
        fresh_rank.load_state_dict(state)
