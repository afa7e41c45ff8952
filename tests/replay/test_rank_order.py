"""RankBasedSampler.order: the rank order `sample` stratifies over, exposed read-only."""

import numpy as np
import pytest

from rdqn.replay import RankBasedSampler


def test_order_is_the_ranked_slots_and_read_only() -> None:
    sampler = RankBasedSampler(alpha=0.7, sort_every=1)
    sampler.attach(4)
    for slot in range(4):
        sampler.on_add(slot)
    sampler.update_priorities(np.arange(4), np.array([0.5, 3.0, 1.0, 2.0]))
    np.testing.assert_array_equal(sampler.order, [1, 3, 2, 0])
    # P(i) follows the order: rank 1 (slot 1) is the most likely.
    p = sampler.probabilities(4)
    np.testing.assert_array_equal(np.argsort(-p, kind="stable"), sampler.order)
    with pytest.raises(ValueError, match="read-only"):
        sampler.order[0] = 0
