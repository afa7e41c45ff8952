"""`move`, the overlapping in-array move the rank order's shifts use: the same result as a
NumPy copy through a temporary, in either direction, for int32 and float64 arrays; `float_bits`,
the bits of a float64, and the rank order's entries built on them; `open_gap`, the insert's
move up by masked vector stores; `prefix_position`, where a value falls among 8 running sums."""

from __future__ import annotations

import numba
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.replay.kernels.intrinsics import float_bits, move, open_gap, prefix_position
from rdqn.replay.rank.layout import entry, slot_mask, slot_of


@numba.njit(cache=False)
def _move(array: np.ndarray, dst: int, src: int, count: int) -> None:
    move(array, dst, src, count)


@settings(deadline=None, max_examples=200, derandomize=True)
@given(
    st.sampled_from([np.int32, np.float64]),
    st.integers(1, 70),
    st.data(),
)
def test_move_matches_a_copy_through_a_temporary(dtype: type, length: int, data) -> None:  # noqa: ANN001
    array = np.arange(length, dtype=dtype) * 3 + 1
    src = data.draw(st.integers(0, length - 1))
    dst = data.draw(st.integers(0, length - 1))
    count = data.draw(st.integers(0, length - max(src, dst)))
    expected = array.copy()
    expected[dst : dst + count] = array[src : src + count].copy()
    _move(array, dst, src, count)
    np.testing.assert_array_equal(array, expected)


def test_a_shift_by_one_either_way_within_a_block() -> None:
    keys = np.array([9.0, 7.0, 5.0, 3.0, 0.0, 0.0])
    _move(keys, 2, 1, 3)  # open a gap at 1 (an insert)
    np.testing.assert_array_equal(keys, [9.0, 7.0, 7.0, 5.0, 3.0, 0.0])
    _move(keys, 1, 2, 4)  # close it again (a remove)
    np.testing.assert_array_equal(keys, [9.0, 7.0, 5.0, 3.0, 0.0, 0.0])


@numba.njit(cache=False)
def _bits(value: float) -> int:
    return float_bits(value)


@numba.njit(cache=False)
def _entry(slot: int, p: float, mask: int) -> tuple[int, int]:
    made = entry(slot, p, np.uint64(mask))
    return made, slot_of(made, np.uint64(mask))


def test_float_bits_are_numpys_view_of_the_float() -> None:
    for value in (0.0, -0.0, 1.0, 1.5e-310, 3.0e300, np.inf, -2.5):
        assert _bits(value) == np.float64(value).view(np.uint64)


@settings(deadline=None, max_examples=200, derandomize=True)
@given(
    st.floats(0.0, 1e300) | st.sampled_from([0.0, -0.0, 5e-324]),
    st.floats(0.0, 1e300) | st.sampled_from([0.0, -0.0, 5e-324]),
    st.integers(1, 2**31 - 1),
    st.data(),
)
def test_entries_order_as_their_priorities_and_keep_the_slot(
    a: float,
    b: float,
    capacity: int,
    data,  # noqa: ANN001
) -> None:
    """An entry's high bits never order two priorities the wrong way round (equal high bits
    leave the order to the exact priorities); -0.0 gives the entry of +0.0; the slot comes
    back, whatever the capacity's mask."""
    slot = data.draw(st.integers(0, capacity - 1))
    mask = slot_mask(capacity)
    assert mask >= capacity - 1 and mask < 2 * max(capacity, 2)
    (ea, slot_a), (eb, _) = _entry(slot, a, mask), _entry(slot, b, mask)
    assert slot_a == slot
    if a < b:
        assert ea <= eb
    if a == b:
        assert ea == eb


@numba.njit(cache=False)
def _open_gap(array: np.ndarray, base: int, at: int, width: int) -> None:
    open_gap(array, base, at, width)


@settings(deadline=None, max_examples=300, derandomize=True)
@given(
    st.sampled_from([np.uint64, np.float64, np.int64]),
    st.sampled_from([8, 16, 32, 64]),
    st.integers(0, 3),
    st.data(),
)
def test_open_gap_moves_the_block_up_from_at_and_nothing_else(
    dtype: type,
    width: int,
    blocks: int,
    data,  # noqa: ANN001
) -> None:
    """Entries at .. width - 2 of the block move up one (the last drops off); the entries before
    `at`, and every entry outside the block, stay as they were."""
    base = data.draw(st.integers(0, blocks)) * width
    at = data.draw(st.integers(0, width - 1))
    array = (np.arange((blocks + 1) * width + 1) * 7 + 3).astype(dtype)
    expected = array.copy()
    expected[base + at + 1 : base + width] = array[base + at : base + width - 1]
    _open_gap(array, base, at, width)
    np.testing.assert_array_equal(array, expected)


@numba.njit(cache=False)
def _prefix_position(counts: np.ndarray, start: int, value: int) -> tuple[int, int]:
    return prefix_position(counts, np.uint64(start), value)


@settings(deadline=None, max_examples=300, derandomize=True)
@given(
    st.lists(st.integers(0, 63) | st.just(0), min_size=24, max_size=24),
    st.integers(0, 2),
    st.data(),
)
def test_prefix_position_counts_the_running_sums_at_or_below_the_value(
    counts: list[int],
    group: int,
    data,  # noqa: ANN001
) -> None:
    """(how many of the 8 running sums are <= value, the last of them or 0), as the step through
    a group's positions computes it, for gaps (0) and values on every edge."""
    array = np.array(counts, np.int32)
    sums = np.cumsum(array[group * 8 : group * 8 + 8])
    value = data.draw(st.integers(0, int(sums[-1]) + 2))
    passed = int((sums <= value).sum())
    assert _prefix_position(array, group * 8, value) == (
        passed,
        int(sums[passed - 1]) if passed else 0,
    )
