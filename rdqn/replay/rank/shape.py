"""The rank order's shape and its bytes: the block capacity C, the physical blocks, the positions
P, the segments and groups of positions (drawn in `rdqn.replay.rank`). Plain arithmetic, no
numba: a server sizes a run against its memory limit (`rdqn.limits`) without loading the
kernels."""

from __future__ import annotations

import numpy as np

__all__ = [
    "GROUP",
    "SEGMENT",
    "block_capacity",
    "max_blocks",
    "positions",
    "rank_order_nbytes",
    "rank_sampler_nbytes",
]

# Positions per segment of the search for a key's block (8 cache lines of last keys); the last
# key of every segment's last position is kept apart too (`segment_key`), so that the search
# for the segment reads a few contiguous cache lines.
SEGMENT = 64

# Positions per group: the slots of each group of positions are counted (a small array that
# stays in the nearest caches); the slot at a rank is found from the groups' prefix ends (the
# group that holds it, `order.select_kernel`), then a step through that group's positions.
# The step through a group's sizes is one vector of 8 lanes (`prefix_position`), so
# GROUP stays 8. Numba's on-disk cache does not notice a change of a constant imported from
# another module: after changing one here, delete rdqn/replay/rank/__pycache__.
GROUP = 8


def block_capacity(capacity: int) -> int:
    """C for ``capacity`` slots: the power of two nearest sqrt(capacity), clamped to [8, 64]
    (a write shifts and scans O(C) entries; splits and merges, once per C/2 writes into a
    block, cost O(C + REACH log P), so C is small)."""
    return int(min(64, max(8, 1 << round(np.log2(max(1.0, np.sqrt(capacity)))))))


def max_blocks(capacity: int) -> int:
    """Physical blocks allocated: at most 2N/C + 1 are ever in use (`rdqn.replay.rank`)."""
    return 2 * capacity // block_capacity(capacity) + 2


def positions(capacity: int) -> int:
    """P: two positions per physical block, so a spread leaves a gap after every block, rounded
    up to whole chunks of 8 groups (`select_kernel` steps through the group counts 8 at a
    time)."""
    chunk = 8 * GROUP
    return -(-2 * max_blocks(capacity) // chunk) * chunk


def rank_order_nbytes(capacity: int) -> int:
    """`RankOrder(capacity).nbytes` without allocating: per slot an int64 stamp, an int32 home
    block and a float64 priority; per physical block C uint64 entries (and one spare after the
    last block), an int32 position and free-stack entry; per position an int32 block and size
    and a float64 last key; per segment of positions (plus one) a float64 last key; per group of
    positions an int32 count; eight int64 counters."""
    c = block_capacity(capacity)
    p = positions(capacity)
    return (
        capacity * (8 + 4 + 8)
        + max_blocks(capacity) * (8 * c + 2 * 4)
        + 8
        + p * (4 + 4 + 8)
        + (p // SEGMENT + 1) * 8
        + p // GROUP * 4
        + 8 * 8
    )


def rank_sampler_nbytes(capacity: int) -> int:
    """`RankBasedSampler.nbytes` once attached to ``capacity`` slots, without allocating: the
    rank order (`rank_order_nbytes`) and the float64 prefix sums of the rank masses."""
    return rank_order_nbytes(capacity) + 8 * capacity
