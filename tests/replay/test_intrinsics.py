"""`move`, the overlapping in-array move the rank order's shifts use: the same result as a
NumPy copy through a temporary, in either direction, for int32 and float64 arrays."""

from __future__ import annotations

import numba
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.replay.intrinsics import move


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
