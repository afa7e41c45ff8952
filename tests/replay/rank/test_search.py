"""The search for a write's block: the first position whose last key is not above the write's
priority, found alone and in a batch, against a count over the last keys."""

import numba
import numpy as np

from rdqn.replay.rank.order import COUNT_LAST, RankOrder
from rdqn.replay.rank.search import find_position, find_positions


@numba.njit
def _alone(state: tuple, last: int, p: np.ndarray) -> np.ndarray:
    found = np.empty(p.shape[0], np.int64)
    for j in range(p.shape[0]):
        found[j] = find_position(state, last, p[j])
    return found


@numba.njit
def _together(state: tuple, p: np.ndarray) -> np.ndarray:
    found = np.empty(p.shape[0], np.int64)
    find_positions(state, p, found)
    return found


def test_a_write_lands_before_the_first_block_that_ends_at_or_below_its_priority() -> None:
    capacity = 20_000  # 600 positions or so: several segments of 64
    order = RankOrder(capacity)
    rng = np.random.default_rng(3)
    priorities = np.round(rng.random(capacity) * 50, 1)  # many ties
    order.write(np.arange(capacity, dtype=np.int64), priorities)
    last = int(order.counters[COUNT_LAST])
    assert last > 4 * 64
    state = order._state
    queries = np.concatenate([rng.choice(priorities, 300), rng.random(300) * 52 - 1, [0.0, 50.0]])
    expected = np.minimum((order.last_key[: last + 1][None, :] > queries[:, None]).sum(1), last)
    np.testing.assert_array_equal(_alone(state, last, queries), expected)
    np.testing.assert_array_equal(_together(state, queries), expected)
    assert (order.blocks[expected] >= 0).all()  # a position that holds a block
