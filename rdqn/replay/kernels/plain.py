"""The plain twins of the fast building blocks (`intrinsics`, `vector_power`): ordinary numba,
no LLVM intrinsic, no private numba API, the same results (`compiled` picks one of each pair at
import; the tests hold every pair to the same outputs).

Each twin has its fast twin's signature and contract, so a kernel calls either unchanged. A
kernel runs them wherever a fast one fails its check (another CPU, another numba or llvmlite)
or ``RDQN_PLAIN_KERNELS`` asks for them: slower, never different, but for `power`: libm's pow,
which libmvec's vector pow matches within its 4-ulp contract.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

__all__ = ["float_bits", "move", "open_gap", "power", "prefetch", "prefix_position"]

_inlined = numba.njit(nogil=True, inline="always")
_unsigned = np.uint64  # offsets numba need not wrap around (see `rank.layout.unsigned`)


@_inlined
def prefetch(array: NDArray, index: int) -> None:
    """A cache hint has no effect on results: nothing to do."""


@_inlined
def move(array: NDArray, dst: int, src: int, count: int) -> None:
    """array[dst : dst + count] = array[src : src + count], ranges that may overlap: copied in
    the direction that reads each entry before it is overwritten."""
    if dst <= src:
        for k in range(count):
            array[dst + k] = array[src + k]
    else:
        for k in range(count - 1, -1, -1):
            array[dst + k] = array[src + k]


@_inlined
def float_bits(value: float) -> np.uint64:
    """The IEEE 754 bits of a float64 as a uint64 (NumPy's view of the scalar)."""
    return np.float64(value).view(np.uint64)


@_inlined
def open_gap(array: NDArray, base: int, at: int, width: int) -> None:
    """array[base + k + 1] = array[base + k] for at <= k < width - 1, from the block's end back
    (the block of `width` entries at `base` opens a gap at `at`; its last entry drops off)."""
    start = _unsigned(base)
    for k in range(width - 1, at, -1):
        array[start + _unsigned(k)] = array[start + _unsigned(k - 1)]


@_inlined
def prefix_position(counts: NDArray[np.int32], start: int, value: int) -> tuple[int, int]:
    """For counts[start : start + 8] and their running sums S_0 .. S_7: (how many S_j are
    <= value, the sum of that many first counts), as int64. With counts >= 0 the second is the
    last S_j <= value (0 if none)."""
    first = _unsigned(start)
    total = 0
    passed = 0
    for j in range(8):
        total += counts[first + _unsigned(j)]
        passed += total <= value
    before = 0
    for j in range(passed):
        before += counts[first + _unsigned(j)]
    return np.int64(passed), np.int64(before)


@_inlined
def power(values: NDArray[np.float64], exponent: float, out: NDArray[np.float64]) -> None:
    """out[k] = values[k] ** exponent: libm's scalar pow, one element at a time."""
    for k in range(values.shape[0]):
        out[k] = values[k] ** exponent
