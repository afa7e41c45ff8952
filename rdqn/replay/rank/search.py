"""The search for the block that takes a key in `order.RankOrder`: a
branch-free binary search over the last keys of the segments of positions, then a count inside
the segment; a batch of keys searches together, level by level, so that their loads overlap.

A searched key is a write's: its stamp is newer than every stored one, so it goes before all
stored keys of its priority p, and only priorities are compared: the block that takes it is at
the first position whose last key is not above p."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.kernels.compiled import inlined
from rdqn.replay.rank.layout import (
    COUNT_LAST,
    COUNTERS,
    LAST_KEY,
    SEGMENT,
    SEGMENT_KEY,
    State,
    unsigned,
)

__all__ = ["find_position", "find_positions"]


@inlined
def _segment_step(state: State, lo: int, half: int, p: float) -> int:
    """One step of the branch-free search for p's segment: lo + half if the segment
    lo + half - 1 ends with a key above p, else lo (a multiply: no branch)."""
    return lo + half * (state[SEGMENT_KEY][lo + half - 1] > p)


@inlined
def _position_in_segment(state: State, last: int, segment: int, p: float) -> int:
    """`find_position` once its segment is known: a count of the last keys above p in it
    (vectorized)."""
    last_key = state[LAST_KEY]
    start = segment * SEGMENT
    stop = min(start + SEGMENT, last + 1)
    q = start
    for k in range(stop - start):  # unsigned offsets: plain vector loads, not gathers
        q += last_key[unsigned(start) + unsigned(k)] > p
    return min(q, last)


@inlined
def find_position(state: State, last: int, p: float) -> int:
    """The first position whose last key is not above p: it holds a block, the one that takes
    a write of priority p (none: the last block, at `last`). A branch-free binary search over the
    last keys of the segments wholly up to `last` finds the segment, then
    `_position_in_segment` the position."""
    lo, length = 0, last // SEGMENT  # the segment is in [lo, lo + length]
    while length > 1:
        half = length >> 1
        lo = _segment_step(state, lo, half, p)
        length -= half
    if length == 1:
        lo = _segment_step(state, lo, 1, p)
    return _position_in_segment(state, last, lo, p)


@inlined
def find_positions(state: State, p: NDArray[np.float64], found: NDArray[np.int64]) -> None:
    """found[j] = `find_position` of priority p[j] for every j: the binary searches advance
    together, one step at a time, so that their loads overlap."""
    last = state[COUNTERS][COUNT_LAST]
    count = found.shape[0]
    for j in range(count):
        found[j] = 0
    length = last // SEGMENT
    while length > 0:
        half = max(length >> 1, 1)
        for j in range(count):
            found[j] = _segment_step(state, found[j], half, p[j])
        length -= half
    for j in range(count):
        found[j] = _position_in_segment(state, last, found[j], p[j])
