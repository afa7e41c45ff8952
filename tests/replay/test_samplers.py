"""Samplers: sampling distributions (chi-square), stratification, IS weights, the new-item
priority, the exact rank order, and one contract shared by the three schemes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy.stats import chisquare

from rdqn.replay import ProportionalSampler, RankBasedSampler, Sampler, UniformSampler

P_ACCEPT = 1e-3  # a correct sampler fails a seeded chi-square test with probability < 0.1 %
P_REJECT = 1e-6  # a wrong expected distribution must be rejected far more decisively


def filled(sampler: Sampler, capacity: int, size: int) -> Sampler:
    sampler.attach(capacity)
    for slot in range(size):
        sampler.on_add(slot)
    return sampler


def draw_counts(sampler: Sampler, size: int, batch: int, rounds: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    counts = np.zeros(size, dtype=np.int64)
    for _ in range(rounds):
        draw = sampler.sample(size, batch, 0.5, rng)
        assert draw.indices.min() >= 0 and draw.indices.max() < size
        counts += np.bincount(draw.indices, minlength=size)
    return counts


def chi_square_p(counts: np.ndarray, probabilities: np.ndarray) -> float:
    return float(chisquare(counts, probabilities * counts.sum()).pvalue)


# ---------------------------------------------------------------- sampling distributions


def test_proportional_frequencies_match_p_alpha() -> None:
    """P(i) = p_i^alpha / sum_k p_k^alpha with alpha = 0.6, eps = 0 on 8 hand-set priorities.

    Stratified draws have less variance than a multinomial, which only makes the test conservative;
    the double-alpha distribution p^(alpha^2) and the uniform one must both be rejected.
    """
    priorities = np.array([0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0])
    sampler = filled(ProportionalSampler(alpha=0.6, eps=0.0), 8, 8)
    sampler.update_priorities(np.arange(8), priorities)
    expected = priorities**0.6 / np.sum(priorities**0.6)
    np.testing.assert_allclose(sampler.probabilities(8), expected, rtol=1e-12)
    counts = draw_counts(sampler, 8, 32, 1000, seed=11)
    assert chi_square_p(counts, expected) > P_ACCEPT
    double_alpha = priorities**0.36 / np.sum(priorities**0.36)
    assert chi_square_p(counts, double_alpha) < P_REJECT
    assert chi_square_p(counts, np.full(8, 1 / 8)) < P_REJECT


def test_rank_frequencies_match_inverse_rank_alpha() -> None:
    """P(i) = rank(i)^-alpha / sum_r r^-alpha, rank 1 = largest |delta|, alpha = 0.7, 12 slots."""
    priorities = np.random.default_rng(5).permutation(12).astype(np.float64) + 0.5
    sampler = filled(RankBasedSampler(alpha=0.7), 12, 12)
    sampler.update_priorities(np.arange(12), priorities)
    ranks = np.empty(12, np.int64)
    ranks[np.argsort(-priorities)] = np.arange(1, 13)
    expected = ranks**-0.7 / np.sum(np.arange(1, 13) ** -0.7)
    np.testing.assert_allclose(sampler.probabilities(12), expected, rtol=1e-12)
    counts = draw_counts(sampler, 12, 16, 2000, seed=12)
    assert chi_square_p(counts, expected) > P_ACCEPT
    reversed_ranks = (13 - ranks) ** -0.7 / np.sum(np.arange(1, 13) ** -0.7)
    assert chi_square_p(counts, reversed_ranks) < P_REJECT
    assert chi_square_p(counts, np.full(12, 1 / 12)) < P_REJECT


def test_uniform_frequencies_are_uniform() -> None:
    sampler = filled(UniformSampler(), 16, 10)
    counts = draw_counts(sampler, 10, 32, 1000, seed=13)
    assert chi_square_p(counts, np.full(10, 0.1)) > P_ACCEPT
    skewed = np.arange(1, 11) / 55
    assert chi_square_p(counts, skewed) < P_REJECT


@pytest.mark.parametrize(
    "make",
    [lambda: ProportionalSampler(alpha=0.0), lambda: RankBasedSampler(alpha=0.0)],
)
def test_alpha_zero_is_exactly_uniform(make: Callable[[], Sampler]) -> None:
    """alpha = 0: every mass is p^0 = 1 (rank^0 = 1), so P(i) = 1/N exactly, whatever |delta|."""
    sampler = filled(make(), 16, 10)
    sampler.update_priorities(np.arange(10), np.array([0.0, 1e-9, 1, 2, 3, 50, 7, 1e6, 9, 0.5]))
    np.testing.assert_array_equal(sampler.probabilities(10), np.full(10, 1.0 / 10))
    draw = sampler.sample(10, 20, 1.0, np.random.default_rng(0))
    np.testing.assert_array_equal(draw.probabilities, np.full(20, 1.0 / 10))
    np.testing.assert_array_equal(draw.weights, np.ones(20))


@pytest.mark.parametrize(
    "make",
    [lambda: ProportionalSampler(alpha=0.6), lambda: RankBasedSampler(alpha=0.0)],
)
def test_stratified_batch_of_size_n_draws_each_equal_slot_once(
    make: Callable[[], Sampler],
) -> None:
    """Equal masses and B = N: segment k is exactly slot k's mass, so each slot appears once."""
    sampler = filled(make(), 16, 11)
    rng = np.random.default_rng(3)
    for _ in range(50):
        draw = sampler.sample(11, 11, 0.4, rng)
        np.testing.assert_array_equal(np.sort(draw.indices), np.arange(11))


def test_stratified_counts_follow_segments() -> None:
    """Masses [1, 1, 1, 1, 4] (alpha 1, eps 0), total 8, B = 8: segments of width 1; slot 4 owns
    [4, 8) so it is drawn exactly 4 times in every batch and slots 0-3 exactly once."""
    sampler = filled(ProportionalSampler(alpha=1.0, eps=0.0), 8, 5)
    sampler.update_priorities(np.arange(5), np.array([1.0, 1.0, 1.0, 1.0, 4.0]))
    rng = np.random.default_rng(4)
    for _ in range(50):
        draw = sampler.sample(5, 8, 1.0, rng)
        np.testing.assert_array_equal(np.bincount(draw.indices, minlength=5), [1, 1, 1, 1, 4])


# ---------------------------------------------------------------- importance-sampling weights


def proportional_1234(**kwargs: object) -> ProportionalSampler:
    """Capacity 4, alpha 1, eps 0, masses [1, 2, 3, 4]: P = [.1, .2, .3, .4], leaf owns
    [0,1) [1,3) [3,6) [6,10). With B = 4 (segment 2.5) and u = [.5, .25, .5, .75] the queries are
    1.25, 3.125, 6.25, 9.375, so the batch is slots [1, 2, 3, 3] with P = [.2, .3, .4, .4]."""
    sampler = ProportionalSampler(alpha=1.0, eps=0.0, **kwargs)  # type: ignore[arg-type]
    filled(sampler, 4, 4)
    sampler.update_priorities(np.arange(4), np.array([1.0, 2.0, 3.0, 4.0]))
    return sampler


U_1233 = [0.5, 0.25, 0.5, 0.75]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        # global: (P / P_min)^-beta with P_min = 0.1 over all stored items
        ({"is_normalization": "global"}, [2**-0.5, 3**-0.5, 4**-0.5, 4**-0.5]),
        # batch: divided by the batch max, i.e. P_min of the batch = 0.2
        ({"is_normalization": "batch"}, [1.0, 1.5**-0.5, 2**-0.5, 2**-0.5]),
        # none: (N P)^-beta with N = 4
        ({"is_normalization": "none"}, [0.8**-0.5, 1.2**-0.5, 1.6**-0.5, 1.6**-0.5]),
        ({"is_normalization": "none", "max_weight": 1.0}, [1.0, 1.2**-0.5, 1.6**-0.5, 1.6**-0.5]),
        ({"is_normalization": "global", "max_weight": 0.55}, [0.55, 0.55, 0.5, 0.5]),
    ],
)
def test_proportional_weights_closed_form(
    kwargs: dict[str, object], expected: list[float], scripted: type
) -> None:
    sampler = proportional_1234(**kwargs)
    draw = sampler.sample(4, 4, 0.5, scripted(U_1233))
    assert draw.indices.tolist() == [1, 2, 3, 3]
    np.testing.assert_allclose(draw.probabilities, [0.2, 0.3, 0.4, 0.4], rtol=1e-15)
    np.testing.assert_allclose(draw.weights, expected, rtol=1e-12)


def test_global_weight_is_one_for_the_min_item(scripted: type) -> None:
    """u_0 = 0.25 -> query 0.625 -> slot 0, the smallest mass: its weight is exactly 1."""
    sampler = proportional_1234()
    draw = sampler.sample(4, 4, 0.7, scripted([0.25, 0.25, 0.5, 0.75]))
    assert draw.indices.tolist() == [0, 2, 3, 3]
    assert draw.weights[0] == 1.0
    np.testing.assert_allclose(draw.weights[1:], [3**-0.7, 4**-0.7, 4**-0.7], rtol=1e-12)


def test_batch_mode_max_weight_is_exactly_one() -> None:
    sampler = filled(ProportionalSampler(alpha=0.8, is_normalization="batch"), 64, 50)
    rng = np.random.default_rng(8)
    sampler.update_priorities(np.arange(50), rng.exponential(2.0, 50))
    for _ in range(20):
        draw = sampler.sample(50, 16, 0.6, rng)
        assert draw.weights.max() == 1.0
        p_min = draw.probabilities.min()
        np.testing.assert_allclose(draw.weights, (draw.probabilities / p_min) ** -0.6, rtol=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ProportionalSampler(alpha=0.7, eps=0.01),
        lambda: RankBasedSampler(alpha=0.7),
    ],
)
def test_global_weights_use_the_smallest_stored_probability(make: Callable[[], Sampler]) -> None:
    """w_i = (P(i) / P_min)^-beta with P_min over every stored item, not just the batch."""
    sampler = filled(make(), 64, 40)
    rng = np.random.default_rng(9)
    sampler.update_priorities(np.arange(40), rng.exponential(1.0, 40))
    draw = sampler.sample(40, 8, 0.4, rng)
    probabilities = sampler.probabilities(40)
    p_min = probabilities[probabilities > 0].min()
    np.testing.assert_allclose(draw.probabilities, probabilities[draw.indices], rtol=1e-12)
    np.testing.assert_allclose(draw.weights, (draw.probabilities / p_min) ** -0.4, rtol=1e-12)
    assert (draw.weights <= 1.0).all()


def test_rank_weights_closed_form(scripted: type) -> None:
    """Rank-based, alpha 1, priorities [.1, .4, .3, .2]: order by |delta| is slots [1, 2, 3, 0]
    with rank masses [1, 1/2, 1/3, 1/4], total 25/12, cumulative [1, 1.5, 1.833, 2.083].
    B = 4, segment 25/48; u = [.5, .96, .9, .75] -> queries .26, 1.02, 1.51, 1.95 -> ranks 1..4.
    P = [12, 6, 4, 3] / 25; global weights with beta 1: P_min / P = [1/4, 1/2, 3/4, 1]."""
    sampler = filled(RankBasedSampler(alpha=1.0), 4, 4)
    sampler.update_priorities(np.arange(4), np.array([0.1, 0.4, 0.3, 0.2]))
    draw = sampler.sample(4, 4, 1.0, scripted([0.5, 0.96, 0.9, 0.75]))
    assert draw.indices.tolist() == [1, 2, 3, 0]
    np.testing.assert_allclose(draw.probabilities, np.array([12, 6, 4, 3]) / 25, rtol=1e-12)
    np.testing.assert_allclose(draw.weights, [0.25, 0.5, 0.75, 1.0], rtol=1e-12)
    none = filled(RankBasedSampler(alpha=1.0, is_normalization="none"), 4, 4)
    none.update_priorities(np.arange(4), np.array([0.1, 0.4, 0.3, 0.2]))
    draw = none.sample(4, 4, 0.5, scripted([0.5, 0.96, 0.9, 0.75]))
    np.testing.assert_allclose(draw.weights, (4 * np.array([12, 6, 4, 3]) / 25) ** -0.5, rtol=1e-12)


@pytest.mark.parametrize("make", [ProportionalSampler, RankBasedSampler])
def test_batch_normalisation_and_the_weight_clip(make: Callable[..., Sampler]) -> None:
    """ "batch": w = (P / the batch's smallest P)^-beta, the largest exactly 1 (for the rank
    sampler (r / r_last)^(alpha beta)); max_weight cuts larger weights to it, here the "none"
    mode's (N P)^-beta, some of which are above it and some below."""
    rng = np.random.default_rng(21)
    sampler = filled(make(alpha=0.8, is_normalization="batch"), 64, 50)
    sampler.update_priorities(np.arange(50), rng.exponential(2.0, 50))
    for _ in range(5):
        draw = sampler.sample(50, 16, 0.6, rng)
        assert draw.weights.max() == 1.0
        smallest = draw.probabilities.min()
        np.testing.assert_allclose(
            draw.weights, (draw.probabilities / smallest) ** -0.6, rtol=1e-12
        )
    clipped = filled(make(alpha=0.8, is_normalization="none", max_weight=1.5), 64, 50)
    clipped.update_priorities(np.arange(50), rng.exponential(2.0, 50))
    draw = clipped.sample(50, 32, 1.0, rng)
    raw = (50 * draw.probabilities) ** -1.0
    assert (raw > 1.5).any() and (raw < 1.5).any()
    np.testing.assert_allclose(draw.weights, np.minimum(raw, 1.5), rtol=1e-12)


@pytest.mark.parametrize("mode", ["global", "batch", "none"])
@pytest.mark.parametrize(
    "make", [ProportionalSampler, RankBasedSampler, lambda **kw: UniformSampler()]
)
def test_beta_zero_gives_unit_weights(make: Callable[..., Sampler], mode: str) -> None:
    sampler = filled(make(is_normalization=mode), 32, 20)
    rng = np.random.default_rng(10)
    sampler.update_priorities(np.arange(20), rng.exponential(3.0, 20))
    draw = sampler.sample(20, 16, 0.0, rng)
    np.testing.assert_array_equal(draw.weights, np.ones(16))


# ---------------------------------------------------------------- priorities of new items


def test_new_item_mass_regression_double_alpha() -> None:
    """Regression: the max priority for new items is kept in the RAW domain. After
    |delta| = 3 with alpha 0.5, eps 0, a new slot's mass is 3^0.5 = 1.732, not (3^0.5)^0.5 = 1.316
    (storing the max *mass* and raising it to alpha again is the double-alpha bug)."""
    sampler = filled(ProportionalSampler(alpha=0.5, eps=0.0), 4, 1)
    assert sampler.tree is not None
    assert sampler.tree[0] == 1.0  # the first item gets priority 1 -> mass 1
    sampler.update_priorities(np.array([0]), np.array([3.0]))
    sampler.on_add(1)
    assert sampler.tree[1] == pytest.approx(3.0**0.5, rel=1e-15)
    assert sampler.tree[1] != pytest.approx((3.0**0.5) ** 0.5, rel=1e-3)


def test_new_item_mass_includes_eps_once() -> None:
    """eps joins |delta| before alpha: p = 3 + 0.01, mass 3.01^0.5."""
    sampler = filled(ProportionalSampler(alpha=0.5, eps=0.01), 4, 1)
    sampler.update_priorities(np.array([0]), np.array([3.0]))
    sampler.on_add(1)
    assert sampler.tree is not None
    assert sampler.tree[1] == pytest.approx(3.01**0.5, rel=1e-15)
    assert sampler.tree[0] == pytest.approx(3.01**0.5, rel=1e-15)
    # a smaller later error does not lower the maximum for new items
    sampler.update_priorities(np.array([0]), np.array([1.0]))
    sampler.on_add(2)
    assert sampler.tree[2] == pytest.approx(3.01**0.5, rel=1e-15)


def test_duplicate_indices_in_one_update_last_wins() -> None:
    sampler = filled(ProportionalSampler(alpha=1.0, eps=0.0), 4, 4)
    sampler.update_priorities(np.array([2, 2, 2]), np.array([5.0, 9.0, 0.5]))
    assert sampler.tree is not None
    np.testing.assert_array_equal(sampler.tree.leaves(), [1.0, 1.0, 0.5, 1.0])
    assert sampler.tree.total == 3.5


def test_probabilities_never_cover_unfilled_slots() -> None:
    sampler = filled(ProportionalSampler(alpha=0.6), 16, 5)
    assert sampler.probabilities(5).shape == (5,)
    assert sampler.probabilities(0).shape == (0,)
    rng = np.random.default_rng(14)
    for _ in range(200):
        draw = sampler.sample(5, 32, 1.0, rng)
        assert draw.indices.max() < 5


def test_zero_priority_slots_are_never_drawn() -> None:
    sampler = filled(ProportionalSampler(alpha=1.0, eps=0.0), 8, 5)
    sampler.update_priorities(np.arange(5), np.array([0.0, 1.0, 0.0, 2.0, 0.0]))
    np.testing.assert_allclose(sampler.probabilities(5), [0, 1 / 3, 0, 2 / 3, 0], rtol=1e-15)
    counts = draw_counts(sampler, 5, 32, 200, seed=15)
    assert counts[[0, 2, 4]].sum() == 0
    draw = sampler.sample(5, 4, 1.0, np.random.default_rng(0))
    assert np.isfinite(draw.weights).all() and (draw.weights <= 1.0).all()


def test_zero_total_mass_is_refused_by_the_update(assert_same_state: Callable) -> None:
    sampler = filled(ProportionalSampler(alpha=0.6, eps=0.0), 4, 3)
    before = sampler.state_dict()
    with pytest.raises(ValueError, match="priority 0"):
        sampler.update_priorities(np.arange(3), np.zeros(3))
    assert_same_state(sampler.state_dict(), before)
    sampler.tree.update(np.arange(3), np.zeros(3))  # type: ignore[union-attr]  # bypass: a corrupt tree
    with pytest.raises(ValueError, match="total priority mass is 0"):
        sampler.sample(3, 2, 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="total priority mass is 0"):
        sampler.probabilities(3)


def test_mass_overflow_is_an_error_and_leaves_tree_unchanged() -> None:
    """(1e200)^2 = inf: rejected before any leaf is written; max_priority unchanged too."""
    sampler = filled(ProportionalSampler(alpha=2.0, eps=0.0), 4, 2)
    assert sampler.tree is not None
    before = sampler.state_dict()
    with pytest.raises(ValueError, match="overflow"):
        sampler.update_priorities(np.array([0, 1]), np.array([1.0, 1e200]))
    np.testing.assert_array_equal(sampler.tree.sum_nodes, before["sum_nodes"])
    np.testing.assert_array_equal(sampler.tree.min_nodes, before["min_nodes"])
    assert sampler.max_priority == before["max_priority"]


def test_total_mass_overflow_is_an_error_and_leaves_tree_unchanged() -> None:
    """Two finite masses of 1e308 sum to inf at the root; the tree must not be left with an
    infinite total (every later sample would fail) but reject the update like a mass overflow."""
    sampler = filled(ProportionalSampler(alpha=1.0, eps=0.0), 4, 2)
    assert sampler.tree is not None
    before = sampler.state_dict()
    with pytest.raises(ValueError, match="overflow|finite|inf"):
        sampler.update_priorities(np.array([0, 1]), np.array([1e308, 1e308]))
    np.testing.assert_array_equal(sampler.tree.sum_nodes, before["sum_nodes"])
    assert sampler.max_priority == before["max_priority"]


# ---------------------------------------------------------------- rank-based order


def test_rank_order_is_exact_after_every_change() -> None:
    """alpha = 1. Four additions at priority 1 rank newest first: slots [3, 2, 1, 0], masses
    1/r over H_4 = 25/12. New |delta| [1, 4, 2, 3] orders them [1, 3, 2, 0] at once. Slot 4,
    added with the largest priority seen (4), is rank 1 straight away, ahead of slot 1 (also
    4, older): order [4, 1, 3, 2, 0] over H_5 = 137/60, and every slot is drawn."""
    sampler = filled(RankBasedSampler(alpha=1.0), 8, 4)
    expected = np.zeros(4)
    expected[[3, 2, 1, 0]] = 1 / np.arange(1, 5)
    np.testing.assert_allclose(sampler.probabilities(4), expected / (25 / 12), rtol=1e-12)
    sampler.update_priorities(np.arange(4), np.array([1.0, 4.0, 2.0, 3.0]))
    expected[[1, 3, 2, 0]] = 1 / np.arange(1, 5)
    np.testing.assert_allclose(sampler.probabilities(4), expected / (25 / 12), rtol=1e-12)

    sampler.on_add(4)
    expected = np.zeros(5)
    expected[[4, 1, 3, 2, 0]] = 1 / np.arange(1, 6)
    np.testing.assert_allclose(sampler.probabilities(5), expected / (137 / 60), rtol=1e-12)
    rng = np.random.default_rng(16)
    counts = np.zeros(5, np.int64)
    for _ in range(100):
        draw = sampler.sample(5, 16, 1.0, rng)
        counts += np.bincount(draw.indices, minlength=5)
        np.testing.assert_allclose(
            draw.probabilities, sampler.probabilities(5)[draw.indices], rtol=1e-12
        )
    assert (counts > 0).all()


def test_rank_sample_and_probabilities_do_not_change_the_order(
    assert_same_state: Callable,
) -> None:
    """Reading is side-effect free: sampling and asking for P(i) leave the state untouched."""
    sampler = filled(RankBasedSampler(alpha=0.7), 16, 7)
    sampler.update_priorities(np.arange(7), np.arange(7, dtype=np.float64))
    before = sampler.state_dict()
    sampler.probabilities(7)
    sampler.sample(7, 8, 0.5, np.random.default_rng(0))
    assert_same_state(sampler.state_dict(), before)


def test_rank_new_items_are_drawn_at_once_newest_first() -> None:
    sampler = filled(RankBasedSampler(alpha=1.0), 8, 3)
    sampler.on_add(3)
    probabilities = sampler.probabilities(4)
    # all priorities 1.0: ties newest write first -> ranks 4..1 for slots 0..3
    np.testing.assert_allclose(probabilities, (1 / np.arange(4, 0, -1)) / (25 / 12), rtol=1e-12)


# ---------------------------------------------------------------- contract over the three schemes

FACTORIES: dict[str, Callable[[], Sampler]] = {
    "uniform": UniformSampler,
    "proportional": lambda: ProportionalSampler(alpha=0.6, eps=1e-3),
    "rank": lambda: RankBasedSampler(alpha=0.7),
}


@pytest.fixture(params=list(FACTORIES))
def make_sampler(request: pytest.FixtureRequest) -> Callable[[], Sampler]:
    return FACTORIES[request.param]


def drive(sampler: Sampler, rng: np.random.Generator, steps: int, capacity: int) -> list:
    """A typical learner loop: add one slot, sample, report |delta| for the batch."""
    out = []
    for step in range(steps):
        sampler.on_add(step % capacity)
        size = min(step + 1, capacity)
        draw = sampler.sample(size, 8, 0.5, rng)
        sampler.update_priorities(draw.indices, rng.exponential(1.0, 8))
        out.append(draw)
    return out


def test_contract(make_sampler: Callable[[], Sampler]) -> None:
    sampler = make_sampler()
    assert isinstance(sampler, Sampler)
    assert isinstance(sampler.name, str)
    sampler.attach(16)
    rng = np.random.default_rng(18)
    for draw in drive(sampler, rng, 40, 16):
        assert draw.indices.dtype == np.int64 and draw.indices.shape == (8,)
        assert draw.probabilities.dtype == np.float64 and draw.weights.dtype == np.float64
        assert ((draw.weights > 0) & (draw.weights <= 1)).all()
    for size in (16, 10):
        sampler2 = make_sampler()
        sampler2.attach(16)
        drive(sampler2, rng, size, 16)
        probabilities = sampler2.probabilities(size)
        assert probabilities.shape == (size,)
        assert (probabilities >= 0).all()
        assert probabilities.sum() == pytest.approx(1.0, abs=1e-12)
        draw = sampler2.sample(size, 64, 0.5, rng)
        assert draw.indices.min() >= 0 and draw.indices.max() < size
        np.testing.assert_allclose(draw.probabilities, probabilities[draw.indices], rtol=1e-12)
        assert sampler2.nbytes >= 0


def test_state_dict_round_trip_continues_identically(
    make_sampler: Callable[[], Sampler], assert_same_state: Callable
) -> None:
    original = make_sampler()
    original.attach(16)
    drive(original, np.random.default_rng(19), 23, 16)
    state = original.state_dict()
    copy = make_sampler()
    copy.attach(16)
    copy.load_state_dict(state)
    assert_same_state(copy.state_dict(), state)
    a = drive(original, np.random.default_rng(20), 30, 16)
    b = drive(copy, np.random.default_rng(20), 30, 16)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.indices, y.indices)
        np.testing.assert_array_equal(x.probabilities, y.probabilities)
        np.testing.assert_array_equal(x.weights, y.weights)
    assert_same_state(original.state_dict(), copy.state_dict())


def test_state_dict_is_a_snapshot(
    make_sampler: Callable[[], Sampler], assert_same_state: Callable
) -> None:
    sampler = make_sampler()
    sampler.attach(8)
    drive(sampler, np.random.default_rng(21), 5, 8)
    state = sampler.state_dict()
    snapshot = sampler.state_dict()
    drive(sampler, np.random.default_rng(22), 10, 8)
    assert_same_state(state, snapshot)


@pytest.mark.parametrize(("mine", "theirs"), [("uniform", "rank"), ("proportional", "uniform")])
def test_load_state_dict_of_another_sampler_is_rejected(mine: str, theirs: str) -> None:
    other = FACTORIES[theirs]()
    other.attach(8)
    sampler = FACTORIES[mine]()
    sampler.attach(8)
    with pytest.raises(ValueError, match="sampler"):
        sampler.load_state_dict(other.state_dict())


def test_sampling_before_attach_is_an_error(make_sampler: Callable[[], Sampler]) -> None:
    with pytest.raises(RuntimeError, match="attach"):
        make_sampler().sample(1, 1, 1.0, np.random.default_rng(0))


def test_uniform_update_priorities_is_a_no_op(assert_same_state: Callable) -> None:
    sampler = filled(UniformSampler(), 8, 8)
    before_state = sampler.state_dict()
    before = sampler.sample(8, 32, 1.0, np.random.default_rng(23))
    sampler.update_priorities(np.arange(8), np.array([100.0, 0, 0, 0, 0, 0, 0, 5.0]))
    assert_same_state(sampler.state_dict(), before_state)
    after = sampler.sample(8, 32, 1.0, np.random.default_rng(23))
    np.testing.assert_array_equal(before.indices, after.indices)
    np.testing.assert_array_equal(sampler.probabilities(8), np.full(8, 1 / 8))


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: ProportionalSampler(alpha=-0.1), "alpha"),
        (lambda: ProportionalSampler(alpha=float("nan")), "alpha"),
        (lambda: RankBasedSampler(alpha=-1.0), "alpha"),
        (lambda: ProportionalSampler(eps=-1e-6), "eps"),
        (lambda: ProportionalSampler(is_normalization="max"), "is_normalization"),
        (lambda: RankBasedSampler(max_weight=0.0), "max_weight"),
    ],
)
def test_bad_sampler_arguments(make: Callable[[], Sampler], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("make", [UniformSampler, ProportionalSampler, RankBasedSampler])
def test_a_draw_beyond_the_stored_slots_is_refused(make: Callable[[], Sampler]) -> None:
    """Attached to 8 slots, 2 stored: a size past them (uniform drew slots 78 and 91 of 100),
    a size below 1 (the trees drew anyway) or an empty batch is refused before any draw."""
    sampler = filled(make(), 8, 2)
    rng = np.random.default_rng(0)
    for size in (100, 3, 0, -1):
        with pytest.raises(ValueError, match=rf"size must be .* 1 to 2, got {size}"):
            sampler.sample(size, 4, 0.5, rng)
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        sampler.sample(2, 0, 0.5, rng)
    draw = sampler.sample(2, 64, 0.5, rng)
    assert set(draw.indices.tolist()) <= {0, 1}
    empty = make()
    empty.attach(8)
    with pytest.raises(ValueError, match="no transition is stored"):
        empty.sample(0, 4, 0.5, rng)
