"""What the kernels of `order.RankOrder` share: where each array sits in the `State` tuple, the
fields of its counters, the tuning constants, and the block entries. The layout itself and its
invariants are drawn in the package docstring (`rdqn.replay.rank`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.kernels.compiled import float_bits, inlined
from rdqn.replay.rank.shape import GROUP, SEGMENT

__all__ = [
    "AHEAD",
    "BLOCKS",
    "COUNTERS",
    "COUNT_BLOCKS",
    "COUNT_C",
    "COUNT_CLOCK",
    "COUNT_FREE",
    "COUNT_LAST",
    "COUNT_SLOT_MASK",
    "COUNT_SPREADS",
    "COUNT_STORED",
    "FREE",
    "GROUP",
    "GROUP_COUNT",
    "HOME",
    "ENTRIES",
    "LAST_KEY",
    "POSITION",
    "PRIORITY",
    "REACH",
    "SEGMENT",
    "SEGMENT_KEY",
    "SIZES",
    "STAMP",
    "State",
    "above",
    "entry",
    "slot_mask",
    "slot_of",
    "tied",
    "unsigned",
]

# Fields of `RankOrder.counters`: blocks in use, slots stored, last stamp given, C, free blocks
# on the stack, the last position that holds a block (-1: none), spreads so far (a statistic),
# the mask of the slot's bits in a block entry (`slot_mask`).
COUNT_BLOCKS, COUNT_STORED, COUNT_CLOCK, COUNT_C, COUNT_FREE, COUNT_LAST = 0, 1, 2, 3, 4, 5
COUNT_SPREADS, COUNT_SLOT_MASK = 6, 7

# The order's arrays travel between the kernels as one tuple, `State`, in `RankOrder._arrays()`
# order; these are their places in it (compile-time constants: reading one costs nothing). The
# entry kernels take them one by one and pack them: from Python, a tuple costs more to pass
# than the same twelve arrays one by one.
STAMP, HOME, ENTRIES, PRIORITY, SIZES, POSITION, FREE, BLOCKS = 0, 1, 2, 3, 4, 5, 6, 7
LAST_KEY, GROUP_COUNT, COUNTERS, SEGMENT_KEY = 8, 9, 10, 11
State = tuple[NDArray, ...]

# How far a split looks for a gap, and the longest run of gaps a merge leaves, before the blocks
# are spread out again.
REACH = 32


# How many writes ahead `writes.write_kernel` prefetches the slots' homes (and half as
# many ahead, the blocks they leave).
AHEAD = 8

# Offsets into a block are unsigned, so numba leaves out its negative-index wrap-around and the
# compiler vectorizes the shifts and scans with plain loads.
unsigned = np.uint64

# A block entry, one uint64: the slot in its low bits (as few as the capacity needs, the mask
# `COUNT_SLOT_MASK`), and above them the high bits of its priority's float64 bits, a monotone
# key: the bits of numbers >= +0.0 order as the numbers do. At 2^20 slots the key keeps 44 bits
# (32 of the mantissa), so only priorities within about 2^-32 of each other share one.


@inlined
def entry(slot: int, p: float, mask: np.uint64) -> np.uint64:
    """The block entry of `slot` with priority p >= 0 (-0.0 counts as +0.0: p + 0.0 is +0.0)."""
    return (float_bits(p + 0.0) & ~mask) | unsigned(slot)


@inlined
def slot_of(entry: np.uint64, mask: np.uint64) -> int:
    """The slot of a block entry."""
    return np.int64(entry & mask)


@inlined
def above(p: float, mask: np.uint64) -> np.uint64:
    """The entries above this are those whose key is above p's: their priority is above p."""
    return float_bits(p + 0.0) | mask


@inlined
def tied(p: float, mask: np.uint64) -> np.uint64:
    """The entries at or above this and not `above(p)` share p's key: their priority may be
    above, equal to or below p, so only the exact priorities can order them."""
    return float_bits(p + 0.0) & ~mask


def slot_mask(capacity: int) -> int:
    """The low bits of an entry that hold its slot: enough for slots 0 .. capacity - 1."""
    return (1 << max(1, (capacity - 1).bit_length())) - 1
