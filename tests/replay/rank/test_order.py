"""RankOrder, the exact rank order behind rank-based replay, and RankBasedSampler.order, its
read-only view. The structure is checked against a lexsort of (priority desc, stamp desc) and
its own invariants (sorted keys, block sizes within [C/2, C), group counts, last keys)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.replay import RankBasedSampler
from rdqn.replay.rank.order import RankOrder
from rdqn.replay.rank.shape import block_capacity, rank_order_nbytes, rank_sampler_nbytes


def test_order_is_the_ranked_slots_and_read_only() -> None:
    sampler = RankBasedSampler(alpha=0.7)
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


def reference(priority: np.ndarray, stamp: np.ndarray) -> np.ndarray:
    stored = np.flatnonzero(stamp >= 0)
    return stored[np.lexsort((-stamp[stored], -priority[stored]))]


class Mirror:
    """A RankOrder and the plain per-slot keys it should hold."""

    def __init__(self, capacity: int) -> None:
        self.order = RankOrder(capacity)
        self.priority = np.zeros(capacity)
        self.stamp = np.full(capacity, -1, np.int64)

    def write(self, slots: np.ndarray, values: np.ndarray, stored_only: bool) -> None:
        """An update (`stored_only`) that names a slot holding nothing is refused whole."""
        if stored_only:
            clock = self.order.clock
            result = self.order.update(slots, values)
            if (self.stamp[slots] < 0).any():
                assert result == -1.0 and self.order.clock == clock
                return
        else:
            self.order.write(slots, values)
        for slot, value in zip(slots, values, strict=True):
            self.priority[slot] = value
            self.stamp[slot] = self.stamp.max(initial=0) + 1

    def check(self) -> None:
        self.order.check_invariants()
        expected = reference(self.priority, self.stamp)
        np.testing.assert_array_equal(self.order.slots_in_order(), expected)
        ranks = np.arange(expected.shape[0])
        np.testing.assert_array_equal(self.order.select(ranks), expected)  # in order: merged
        np.testing.assert_array_equal(self.order.select(ranks[::-1].copy()), expected[::-1])
        np.testing.assert_array_equal(self.order.stamp, self.stamp)
        np.testing.assert_array_equal(
            self.order.priorities(), np.where(self.stamp >= 0, self.priority, 0.0)
        )


@pytest.mark.parametrize("capacity", [1, 5, 40, 700])
def test_blocks_split_merge_and_borrow_under_drifting_priorities(capacity: int) -> None:
    """Priorities drift upwards, so writes pile into the first blocks (splits) and drain the
    last ones (borrows, merges, an emptied block); the order stays exact throughout."""
    mirror = Mirror(capacity)
    rng = np.random.default_rng(capacity)
    for step in range(120):
        slots = rng.integers(0, capacity, rng.integers(1, 30))
        values = np.round(rng.random(slots.shape[0]) * (1 + step / 20), 1)  # ties too
        mirror.write(slots, values, stored_only=bool(step % 3 == 2))
        mirror.check()


# Ties, -0.0 (a tie with 0.0), and priorities whose entries share their key, which only the
# exact priorities order: 1.0 and its next float64s differ in the last bits of the mantissa,
# where an entry holds its slot (at least 1 bit).
PRIORITIES = [0.0, -0.0, 0.5, 1.0 - 2**-53, 1.0, 1.0 + 2**-52, 1.0 + 2**-51, 2.0, 9.0]


@settings(deadline=None, max_examples=100, derandomize=True)
@given(
    st.integers(1, 60),
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(0, 59), st.sampled_from(PRIORITIES))),
            st.booleans(),
        ),
        max_size=25,
    ),
)
def test_any_writes_keep_the_lexsort_order(capacity: int, batches: list) -> None:
    """Duplicates in one batch: the last one wins (it gets the newest stamp)."""
    mirror = Mirror(capacity)
    for pairs, stored_only in batches:
        slots = np.array([slot % capacity for slot, _ in pairs], np.int64)
        values = np.array([value for _, value in pairs], np.float64)
        mirror.write(slots, values, stored_only)
        mirror.check()


def test_writes_crowding_one_band_move_and_spread_the_blocks() -> None:
    """Every write lands in one narrow band of priorities: the blocks there split again and
    again, so the gaps near them run out (blocks move over, then all are spread out again),
    while the blocks the slots leave merge and leave runs of gaps; the order stays exact."""
    capacity = 1 << 15
    order = RankOrder(capacity)
    rng = np.random.default_rng(3)
    priority = rng.random(capacity)
    order.write(np.arange(capacity), priority)
    stamp = np.arange(1, capacity + 1)
    spreads = order.spreads
    for band in (0.5, 0.9, 0.1):
        for _ in range(10):
            slots = rng.permutation(capacity)[:2000]
            values = band + rng.random(2000) * 1e-3
            order.write(slots, values)
            priority[slots] = values
            stamp[slots] = order.clock - 1999 + np.arange(2000)
        order.check_invariants()
        np.testing.assert_array_equal(order.slots_in_order(), reference(priority, stamp))
    assert order.spreads > spreads


def test_load_rebuilds_the_same_order() -> None:
    mirror = Mirror(300)
    rng = np.random.default_rng(7)
    mirror.write(rng.integers(0, 300, 400), rng.random(400), stored_only=False)
    rebuilt = RankOrder(300)
    rebuilt.load(mirror.priority, mirror.stamp, mirror.order.clock)
    rebuilt.check_invariants()
    np.testing.assert_array_equal(rebuilt.slots_in_order(), mirror.order.slots_in_order())
    rebuilt.write(np.array([3]), np.array([0.5]))  # and it keeps working
    rebuilt.check_invariants()


@pytest.mark.parametrize("capacity", [1, 7, 1000, 1025, 1 << 17])
def test_nbytes_is_predicted_without_allocating(capacity: int) -> None:
    order = RankOrder(capacity)
    assert order.nbytes == rank_order_nbytes(capacity)
    sampler = RankBasedSampler()
    sampler.attach(capacity)
    assert sampler.nbytes == rank_sampler_nbytes(capacity)
    assert 8 <= block_capacity(capacity) <= 128


def test_memory_per_slot_stays_under_forty_eight_bytes() -> None:
    """Per slot: stamp 8 + home 4 + priority 8 + cdf 8, and at most 2N/C + 2 blocks of 8 C + 8
    bytes with 2 positions of about 16 bytes each (C = 64: about 45.3 bytes)."""
    assert rank_sampler_nbytes(1 << 20) / (1 << 20) < 48


class RemovingMirror(Mirror):
    """`Mirror` whose slots may also leave the order: stamps are the order's clock, which
    goes on counting past the stamps of removed slots."""

    def write(self, slots: np.ndarray, values: np.ndarray, stored_only: bool) -> None:
        clock = self.order.clock
        if stored_only and (self.stamp[slots] < 0).any():
            assert self.order.update(slots, values) == -1.0 and self.order.clock == clock
            return
        (self.order.update if stored_only else self.order.write)(slots, values)
        for k, (slot, value) in enumerate(zip(slots, values, strict=True)):
            self.priority[slot] = value
            self.stamp[slot] = clock + k + 1

    def remove(self, slots: np.ndarray) -> None:
        self.order.remove(slots)
        self.stamp[slots] = -1
        self.priority[slots] = 0.0


@settings(deadline=None, max_examples=100, derandomize=True)
@given(
    st.integers(1, 60),
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(0, 59), st.sampled_from(PRIORITIES))),
            st.booleans(),
            st.lists(st.integers(0, 59), max_size=40),
        ),
        max_size=25,
    ),
)
def test_removals_between_writes_keep_the_lexsort_order(capacity: int, batches: list) -> None:
    """Removals (of stored slots, down to none) between writes: the order is the lexsort of
    the slots left, its invariants hold, and an emptied order takes writes again."""
    mirror = RemovingMirror(capacity)
    for pairs, stored_only, picks in batches:
        slots = np.array([slot % capacity for slot, _ in pairs], np.int64)
        values = np.array([value for _, value in pairs], np.float64)
        mirror.write(slots, values, stored_only)
        mirror.check()
        stored = np.flatnonzero(mirror.stamp >= 0)
        if stored.size:
            leaving = np.unique(stored[np.array(picks, np.int64) % stored.size])
            mirror.remove(leaving)
            mirror.check()
    assert mirror.order.size == int((mirror.stamp >= 0).sum())


def test_removing_every_slot_empties_the_order_and_frees_its_block() -> None:
    order = RankOrder(40)
    order.write(np.arange(40), np.arange(40.0))
    order.remove(np.arange(0, 40, 2))
    order.check_invariants()
    np.testing.assert_array_equal(order.slots_in_order(), np.arange(39, 0, -2))
    order.remove(np.arange(1, 40, 2))
    order.check_invariants()
    assert order.size == 0 and order.counters[0] == 0  # no block in use
    order.write(np.array([7]), np.array([1.0]))
    order.check_invariants()
    np.testing.assert_array_equal(order.slots_in_order(), [7])


@pytest.mark.parametrize(
    ("slots", "match"),
    [([3, 3], "distinct"), ([40], r"in \[0, 40\)"), ([-1], r"in \[0, 40\)"), ([5], "no item")],
)
def test_a_bad_removal_is_refused_and_changes_nothing(slots: list[int], match: str) -> None:
    order = RankOrder(40)
    order.write(np.arange(5), np.ones(5))
    before = order.slots_in_order()
    with pytest.raises(ValueError, match=match):
        order.remove(np.array(slots, np.int64))
    np.testing.assert_array_equal(order.slots_in_order(), before)
    order.check_invariants()
