"""The sampler check: its null law matches stratified (and independent) draws, so a correct
sampler gets uniform p-values and a wrong one p < 0.001 (seeded; tolerances stated per test).

Hand-computed stratified case used below: P = [0.1, 0.2, 0.3, 0.4], B = 2 (segments [0, 0.5) and
[0.5, 1)), one bin per slot. Bin edges at cumulative 0.1, 0.3, 0.6 sit in segment 0 (at 0.2 and 0.6
of its width) and segment 1 (at 0.2): slot 3, which covers [0.6, 1), can only be drawn by segment 1,
so a batch [3, 3] is impossible, and slot 0 is drawn at most once per batch.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rdqn.replay import ProportionalSampler, RankBasedSampler, UniformSampler
from rdqn.training.sampler_check import REPLICATES, check_draws, check_sampler

SMALLEST_P = 1 / (REPLICATES + 1)
HAND_P = np.array([0.1, 0.2, 0.3, 0.4])


def filled(sampler, size: int, seed: int = 0):  # noqa: ANN001, ANN201
    """`sampler` attached to `size` slots with skewed priorities (|delta| ~ Exp(1)^2)."""
    rng = np.random.default_rng(seed)
    sampler.attach(size)
    for slot in range(size):
        sampler.on_add(slot)
    sampler.update_priorities(np.arange(size), rng.exponential(size=size) ** 2)
    return sampler


def stratified_draws(
    p: np.ndarray, batches: int, batch_size: int, rng: np.random.Generator
) -> np.ndarray:
    """Reference stratified sampler: one inverse-CDF query (k + u_k) / B per segment."""
    cdf = np.cumsum(p) / p.sum()
    queries = (np.arange(batch_size) + rng.random((batches, batch_size))) / batch_size
    return np.minimum(np.searchsorted(cdf, queries, side="right"), p.size - 1)


def independent_draws(
    p: np.ndarray, batches: int, batch_size: int, rng: np.random.Generator
) -> np.ndarray:
    return rng.choice(p.size, size=(batches, batch_size), p=p / p.sum())


SAMPLERS = {
    "proportional": lambda: filled(ProportionalSampler(alpha=0.7), 500),
    "rank": lambda: filled(RankBasedSampler(alpha=0.7), 500),
    "uniform": lambda: filled(UniformSampler(), 500),
}


@pytest.mark.slow  # thousands of batches drawn from each sampler: seconds
@pytest.mark.parametrize("name", SAMPLERS)
def test_a_correct_sampler_gets_uniform_p_values(name: str) -> None:
    """300 seeded checks of the real sampler: about 5 % of p-values below 0.05 (binomial 99.9 %
    range for 300 draws: 5 to 28) and no evidence against uniformity (KS p > 0.001)."""
    sampler = SAMPLERS[name]()
    rng = np.random.default_rng(1)
    p_values = np.array(
        [check_sampler(sampler, 500, 32, batches=16, bins=16, rng=rng).p_value for _ in range(300)]
    )
    assert 5 <= np.count_nonzero(p_values < 0.05) <= 28
    assert stats.kstest(p_values, "uniform").pvalue > 1e-3


def test_multinomial_chi_square_is_about_one_for_stratified_draws() -> None:
    """The bug this check replaces: Pearson's chi-square against a multinomial gave p ~ 1.000 for
    every stratified batch, so it could not tell a good sampler from a subtly bad one."""
    sampler = filled(ProportionalSampler(alpha=0.7), 500)
    rng = np.random.default_rng(2)
    fit = check_sampler(sampler, 500, 128, batches=16, bins=16, rng=rng)
    pearson = stats.chisquare(fit.observed, fit.expected).pvalue
    assert pearson > 0.99
    assert fit.p_value < 0.99 and fit.stratified


def test_independent_draws_are_not_a_stratified_sampler() -> None:
    """Right proportions but no stratification: a sampler claiming to stratify is caught."""
    p = filled(ProportionalSampler(alpha=0.7), 500).probabilities(500)
    rng = np.random.default_rng(3)
    for _ in range(5):
        draws = independent_draws(p, 16, 64, rng)
        assert check_draws(draws, p, stratified=True, bins=16, rng=rng).p_value == SMALLEST_P
        # ... and the same draws pass as what they are.
    accepted = [
        check_draws(independent_draws(p, 16, 64, rng), p, stratified=False, bins=16, rng=rng)
        for _ in range(20)
    ]
    assert sum(fit.p_value < 1e-3 for fit in accepted) <= 1


@pytest.mark.parametrize(
    "bug",
    ["double alpha", "off by one", "one bin 10 % heavy"],
)
def test_a_wrong_stratified_sampler_is_rejected(bug: str) -> None:
    """Stratified draws from the wrong distribution: p < 0.001 in every one of 5 seeded checks."""
    sampler = filled(ProportionalSampler(alpha=0.7), 500)
    p = sampler.probabilities(500)
    if bug == "double alpha":  # masses raised to alpha twice
        wrong = p**0.7
    elif bug == "one bin 10 % heavy":
        wrong = p.copy()
        wrong[:32] *= 1.1
    else:
        wrong = p
    rng = np.random.default_rng(4)
    for _ in range(5):
        draws = stratified_draws(wrong, 16, 64, rng)
        if bug == "off by one":
            draws = np.minimum(draws + 1, 499)
        assert check_draws(draws, p, stratified=True, bins=16, rng=rng).p_value < 1e-3


def test_hand_computed_case_impossible_and_possible_batches() -> None:
    rng = np.random.default_rng(5)
    impossible = check_draws(np.array([[3, 3]]), HAND_P, stratified=True, bins=4, rng=rng)
    assert impossible.statistic == np.inf and impossible.p_value == SMALLEST_P
    # Drawn independently, [3, 3] is merely unlikely (0.16).
    independent = check_draws(np.array([[3, 3]]), HAND_P, stratified=False, bins=4, rng=rng)
    assert np.isfinite(independent.statistic) and independent.p_value > SMALLEST_P
    fit = check_draws(np.array([[0, 2], [1, 3]]), HAND_P, stratified=True, bins=4, rng=rng)
    assert np.isfinite(fit.statistic) and fit.p_value > 0.05
    np.testing.assert_array_equal(fit.observed, [1, 1, 1, 1])
    np.testing.assert_allclose(fit.expected, 4 * HAND_P)
    # Null ranges: slot 0 at most once per batch (0..2 over two batches); slot 3 is drawn by
    # segment 1 with chance 0.8, so 0..2 as well.
    np.testing.assert_array_equal(fit.low[[0, 3]], [0, 0])
    assert fit.high[0] <= 2 and fit.high[3] <= 2


def test_counts_add_up_and_stratified_ranges_are_tight() -> None:
    """Observed and expected both total K B; a bin's stratified null range is a few draws wide
    (two boundary segments), far narrower than independent draws' +-2 sqrt(K B pi)."""
    sampler = filled(ProportionalSampler(alpha=0.7), 500)
    rng = np.random.default_rng(6)
    fit = check_sampler(sampler, 500, 128, batches=16, bins=16, rng=rng)
    assert fit.observed.sum() == fit.expected.sum() == pytest.approx(16 * 128)
    assert fit.batches == 16 and fit.batch_size == 128 and fit.axis == "buffer slot"
    assert np.all(fit.low <= fit.expected + 1) and np.all(fit.expected - 1 <= fit.high)
    assert np.all(fit.high - fit.low <= 2 * 2 * np.sqrt(16))  # two Bin(16, f) edges
    independent = check_draws(
        independent_draws(sampler.probabilities(500), 16, 128, rng),
        sampler.probabilities(500),
        stratified=False,
        bins=16,
        rng=rng,
    )
    assert np.mean(independent.high - independent.low) > 2 * np.mean(fit.high - fit.low)


def test_rank_based_replay_is_checked_in_rank_order() -> None:
    sampler = filled(RankBasedSampler(alpha=0.7), 200)
    fit = check_sampler(sampler, 200, 32, batches=16, bins=8, rng=np.random.default_rng(7))
    assert fit.axis == "rank" and fit.stratified
    # Rank order: the first bin holds the top ranks, so it expects the most draws.
    assert fit.expected[0] == fit.expected.max()
    np.testing.assert_array_less(np.diff(fit.expected), 0)


def test_uniform_replay_is_checked_as_independent_draws() -> None:
    fit = check_sampler(
        filled(UniformSampler(), 64), 64, 8, batches=4, bins=4, rng=np.random.default_rng(8)
    )
    assert not fit.stratified
    np.testing.assert_allclose(fit.expected, [8, 8, 8, 8])


def test_more_bins_than_slots_and_one_bin() -> None:
    rng = np.random.default_rng(9)
    fit = check_draws(np.array([[0, 2]]), HAND_P, stratified=True, bins=16, rng=rng)
    assert fit.bin_edges.tolist() == [0, 1, 2, 3, 4]
    one = check_draws(np.array([[0, 2]]), HAND_P, stratified=True, bins=1, rng=rng)
    assert one.p_value == 1.0 and one.observed.tolist() == [2.0]


def test_bad_inputs_are_errors() -> None:
    rng = np.random.default_rng(10)
    with pytest.raises(ValueError, match="draws must be slots in \\[0, 4\\)"):
        check_draws(np.array([[4]]), HAND_P, stratified=True, bins=2, rng=rng)
    with pytest.raises(ValueError, match="non-empty \\(batches, batch_size\\)"):
        check_draws(np.array([0, 1]), HAND_P, stratified=True, bins=2, rng=rng)
    with pytest.raises(ValueError, match="probabilities must be finite"):
        check_draws(np.array([[0]]), np.zeros(4), stratified=True, bins=2, rng=rng)
    with pytest.raises(ValueError, match="order must be a permutation of the 4 slots"):
        check_draws(
            np.array([[0]]), HAND_P, order=np.array([0, 0, 1, 2]), stratified=True, bins=2, rng=rng
        )


@pytest.mark.parametrize(
    ("scheme", "stratified", "axis"),
    [
        ("proportional", True, "buffer slot"),
        ("rank", True, "rank"),
        ("uniform", False, "buffer slot"),
    ],
)
def test_the_trainer_checks_its_own_sampler(scheme: str, stratified: bool, axis: str) -> None:
    from rdqn.presets import preset
    from rdqn.training.trainer import Trainer

    config = preset("per-notebook").with_overrides(
        {
            "train.total_steps": 200,
            "train.learning_starts": 64,
            "replay.capacity": 256,
            "replay.batch_size": 16,
            "replay.scheme": scheme,
        }
    )
    trainer = Trainer(config).run()
    fit = trainer.snapshot().fit
    assert fit is not None and (fit.stratified, fit.axis) == (stratified, axis)
    assert fit.batch_size == 16 and fit.observed.sum() == 16 * fit.batches
    assert SMALLEST_P <= fit.p_value <= 1.0
