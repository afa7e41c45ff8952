"""The sum tree's shape and its bytes: the first leaf P and the node arrays (drawn in
`rdqn.replay.sumtree`). Plain arithmetic, no numba, like `rdqn.replay.rank.shape`: a server sizes
a run against its memory limit (`rdqn.limits`) without loading the kernels."""

from __future__ import annotations

__all__ = ["leaf_offset", "sum_tree_nbytes"]


def leaf_offset(capacity: int) -> int:
    """P, the sum tree's first leaf: the smallest power of two >= capacity."""
    return 1 << max(0, (capacity - 1).bit_length())


def sum_tree_nbytes(capacity: int, track_min: bool = True) -> int:
    """`SumTree.nbytes` for ``capacity`` leaves, without allocating: 2P float64 nodes, twice
    with the min tree (P = the smallest power of two >= capacity)."""
    return 2 * leaf_offset(capacity) * 8 * (2 if track_min else 1)
