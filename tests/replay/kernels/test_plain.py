"""The plain twins (`kernels.plain`): hand-computed cases, and the same results as their fast
twins (`kernels.intrinsics`, `kernels.vector_power`) on any input, each compiled in a kernel of
its own."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.replay.kernels import intrinsics, plain
from rdqn.replay.kernels.compiled import agrees_with_libm
from rdqn.replay.kernels.vector_power import make_power, widths_to_try


@numba.njit(cache=False)
def _plain_move(array: np.ndarray, dst: int, src: int, count: int) -> None:
    plain.move(array, dst, src, count)


@numba.njit(cache=False)
def _fast_move(array: np.ndarray, dst: int, src: int, count: int) -> None:
    intrinsics.move(array, dst, src, count)


@numba.njit(cache=False)
def _plain_open_gap(array: np.ndarray, base: int, at: int, width: int) -> None:
    plain.open_gap(array, base, at, width)


@numba.njit(cache=False)
def _fast_open_gap(array: np.ndarray, base: int, at: int, width: int) -> None:
    intrinsics.open_gap(array, base, at, width)


@numba.njit(cache=False)
def _plain_prefix_position(counts: np.ndarray, start: int, value: int) -> tuple[int, int]:
    return plain.prefix_position(counts, np.uint64(start), value)


@numba.njit(cache=False)
def _fast_prefix_position(counts: np.ndarray, start: int, value: int) -> tuple[int, int]:
    return intrinsics.prefix_position(counts, np.uint64(start), value)


@numba.njit(cache=False)
def _plain_float_bits(value: float) -> int:
    return plain.float_bits(value)


@numba.njit(cache=False)
def _fast_float_bits(value: float) -> int:
    return intrinsics.float_bits(value)


@numba.njit(cache=False)
def _plain_prefetch_sum(values: np.ndarray) -> float:
    total = 0.0
    for k in range(values.shape[0]):
        plain.prefetch(values, k)
        total += values[k]
    return total


@numba.njit(cache=False)
def _plain_power(values: np.ndarray, exponent: float, out: np.ndarray) -> None:
    plain.power(values, exponent, out)


def test_move_by_hand_either_way() -> None:
    keys = np.array([9.0, 7.0, 5.0, 3.0, 0.0, 0.0])
    _plain_move(keys, 2, 1, 3)  # up one, overlapping: back to front
    np.testing.assert_array_equal(keys, [9.0, 7.0, 7.0, 5.0, 3.0, 0.0])
    _plain_move(keys, 1, 2, 4)  # down one: front to back
    np.testing.assert_array_equal(keys, [9.0, 7.0, 5.0, 3.0, 0.0, 0.0])


def test_open_gap_by_hand() -> None:
    """A block of 8 at offset 8 opens a gap at 2: entries 2..6 move up, entry 7 drops off."""
    array = np.arange(17, dtype=np.uint64)
    _plain_open_gap(array, 8, 2, 8)
    np.testing.assert_array_equal(array, [*range(11), 10, 11, 12, 13, 14, 16])


@pytest.mark.parametrize(
    ("value", "expected"),
    [(-1, (0, 0)), (0, (0, 0)), (2, (0, 0)), (3, (2, 3)), (8, (3, 8)), (9, (6, 9)), (99, (8, 18))],
)
def test_prefix_position_by_hand(value: int, expected: tuple[int, int]) -> None:
    """counts 3 0 5 1 0 0 7 2, running sums 3 3 8 9 9 9 16 18."""
    counts = np.array([3, 0, 5, 1, 0, 0, 7, 2], np.int32)
    assert _plain_prefix_position(counts, 0, value) == expected


def test_float_bits_by_hand() -> None:
    assert _plain_float_bits(1.0) == 0x3FF0_0000_0000_0000
    assert _plain_float_bits(-2.0) == 0xC000_0000_0000_0000
    assert _plain_float_bits(5e-324) == 1


def test_prefetch_changes_nothing() -> None:
    values = np.linspace(0.5, 9.0, 18)
    assert _plain_prefetch_sum(values) == sum(values.tolist())  # the same additions in order


def test_power_is_libms_pow_exactly() -> None:
    values = np.array([0.5, 3.0, 7.25, 1e-200, 1e300, 0.0, np.inf, np.nan])
    out = np.empty_like(values)
    _plain_power(values, 0.6, out)
    expected = [math.pow(v, 0.6) if v == v else math.nan for v in values.tolist()]
    np.testing.assert_array_equal(out, expected)


@settings(deadline=None, max_examples=300, derandomize=True)
@given(st.sampled_from([np.uint64, np.float64, np.int32]), st.integers(1, 70), st.data())
def test_move_as_the_fast_one(dtype: type, length: int, data: st.DataObject) -> None:
    src = data.draw(st.integers(0, length - 1))
    dst = data.draw(st.integers(0, length - 1))
    count = data.draw(st.integers(0, length - max(src, dst)))
    original = (np.arange(length) * 5 + 2).astype(dtype)
    ours, theirs = original.copy(), original.copy()
    _plain_move(ours, dst, src, count)
    _fast_move(theirs, dst, src, count)
    np.testing.assert_array_equal(ours, theirs)
    expected = original.copy()
    expected[dst : dst + count] = original[src : src + count].copy()
    np.testing.assert_array_equal(ours, expected)


@settings(deadline=None, max_examples=300, derandomize=True)
@given(
    st.sampled_from([np.uint64, np.float64, np.int64]),
    st.sampled_from([8, 16, 32, 64]),
    st.integers(0, 3),
    st.data(),
)
def test_open_gap_as_the_fast_one(
    dtype: type, width: int, blocks: int, data: st.DataObject
) -> None:
    base = data.draw(st.integers(0, blocks)) * width
    at = data.draw(st.integers(0, width - 1))
    original = (np.arange((blocks + 1) * width + 1) * 7 + 3).astype(dtype)
    ours, theirs = original.copy(), original.copy()
    _plain_open_gap(ours, base, at, width)
    _fast_open_gap(theirs, base, at, width)
    np.testing.assert_array_equal(ours, theirs)


@settings(deadline=None, max_examples=300, derandomize=True)
@given(st.lists(st.integers(0, 64), min_size=24, max_size=24), st.integers(0, 2), st.data())
def test_prefix_position_as_the_fast_one(
    counts: list[int], group: int, data: st.DataObject
) -> None:
    array = np.array(counts, np.int32)
    value = data.draw(st.integers(-2, int(array[group * 8 : group * 8 + 8].sum()) + 2))
    assert _plain_prefix_position(array, group * 8, value) == _fast_prefix_position(
        array, group * 8, value
    )


@settings(deadline=None, max_examples=300, derandomize=True)
@given(st.floats(allow_nan=False) | st.sampled_from([0.0, -0.0, 5e-324, np.inf, -np.inf]))
def test_float_bits_as_the_fast_one(value: float) -> None:
    assert _plain_float_bits(value) == _fast_float_bits(value)


_FAST_POWERS = {width: make_power(width) for width in widths_to_try()}


@numba.njit(cache=False)
def _widest_power(values: np.ndarray, exponent: float, out: np.ndarray) -> None:
    _WIDEST(values, exponent, out)


_WIDEST = _FAST_POWERS[max(_FAST_POWERS)] if _FAST_POWERS else plain.power


@settings(deadline=None, max_examples=200, derandomize=True)
@given(
    st.lists(st.floats(0.0, 1e300) | st.sampled_from([0.0, np.inf, 1.0]), max_size=40),
    st.sampled_from([0.6, -0.4, 0.7, -0.28, 1.0, 0.0, 2.5]),
)
def test_power_within_libmvecs_contract_of_the_fast_one(
    values: list[float], exponent: float
) -> None:
    array = np.array(values, np.float64)
    ours, theirs = np.empty_like(array), np.empty_like(array)
    _plain_power(array, exponent, ours)
    _widest_power(array, exponent, theirs)
    assert agrees_with_libm(theirs, array, exponent)
    assert agrees_with_libm(ours, array, exponent)
