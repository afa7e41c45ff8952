"""rdqn.training.replay_expectation: uniform replay's expected replays by age, by hand and
against the replay memory's own counts."""

from __future__ import annotations

import numpy as np
import pytest

from rdqn.replay import ReplayBuffer, UniformSampler
from rdqn.training.replay_expectation import expected_uniform_replays


def test_hand_computed_case() -> None:
    """capacity 4, B = 2, updates after steps 2…6 (learning_starts 1, every step): N_t = 2, 3,
    4, 4, 4, so B / N_t = 1, 2/3, 1/2, 1/2, 1/2. Written at step 6 (age 0): 1/2; at 5: 1; at 4:
    3/2; at 3: 2/3 + 3/2; age 4 is no longer stored."""
    got = expected_uniform_replays(
        [0, 1, 2, 3, 4], 6, capacity=4, batch_size=2, learning_starts=1, train_every=1
    )
    assert got.tolist() == pytest.approx([0.5, 1.0, 1.5, 2 / 3 + 1.5, 0.0])


def test_updates_every_other_step_and_past_the_capacity() -> None:
    """train_every 2, learning_starts 3, capacity 3, B = 3, W = 9: updates after steps 4, 6, 8
    with N = 3 each, one replay each. Ages 0…2 were written at steps 9, 8, 7."""
    got = expected_uniform_replays(
        [0, 1, 2], 9, capacity=3, batch_size=3, learning_starts=3, train_every=2
    )
    assert got.tolist() == pytest.approx([0.0, 1.0, 1.0])


def test_bad_ages_are_refused() -> None:
    with pytest.raises(ValueError, match="ages must be >= 0"):
        expected_uniform_replays(
            [-1], 5, capacity=4, batch_size=2, learning_starts=0, train_every=1
        )


@pytest.mark.slow  # 200 memories filled and sampled 60,000 times in all: seconds
def test_the_memorys_counts_match_it_under_uniform_replay() -> None:
    """200 seeds of a uniform replay memory filled and sampled as a trainer does (capacity 50,
    B = 8, updates every 2nd step after step 10, 300 steps): the mean count of each age across
    seeds is within 4 standard errors of the expectation, which for a memory that has been full
    since the transition was stored is B·updates/N."""
    capacity, batch, starts, every, steps, seeds = 50, 8, 10, 2, 300, 200
    counts = np.zeros((seeds, capacity))
    for seed in range(seeds):
        buffer = ReplayBuffer(capacity, (1,), sampler=UniformSampler(), seed=seed)
        for t in range(1, steps + 1):
            buffer.add(np.float32([t]), 0, 0.0, np.float32([t + 1]), False, False)
            if t > starts and t % every == 0:
                buffer.sample(batch)
        ages = buffer.ages(np.arange(capacity))
        counts[seed, ages] = buffer.sample_counts
    ages = np.arange(capacity)
    expected = expected_uniform_replays(
        ages, steps, capacity=capacity, batch_size=batch, learning_starts=starts, train_every=every
    )
    # Each count is a sum of independent binomials Bin(B, 1/N_t): variance sum B/N (1 - 1/N).
    variance = expected * (1 - 1 / capacity)
    z = (counts.mean(axis=0) - expected) / np.sqrt(variance / seeds)
    assert np.abs(z).max() < 4.0, z
    # The oldest slot has been in (capacity - 1) // every updates (steps 252…300 even: 25).
    assert expected[-1] == pytest.approx(batch * 25 / capacity)
