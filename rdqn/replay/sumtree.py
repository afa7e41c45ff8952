"""Sum tree (with an optional min tree) for proportional prioritized replay.

A sum tree stores one non-negative *mass* per leaf and the sum of its children in every internal
node, so the root holds the total mass and a prefix-sum search ("which leaf owns mass m?") takes
O(log N). Schaul et al. 2015 (arXiv:1511.05952, appendix B.2.1) use it to sample
P(i) = m_i / sum_k m_k.

Layout: the sum tree is a float64 array of 2P nodes, P = the smallest power of two >= capacity.
Node 1 is the root, node j has children 2j and 2j+1, leaf i lives at node P + i. Node 0 is unused.
A capacity-4 tree with masses [1, 2, 3, 4]::

                 [1] 10
               /        \\
         [2] 3            [3] 7
         /    \\          /    \\
      [4] 1  [5] 2    [6] 3  [7] 4        array: [_, 10, 3, 7, 1, 2, 3, 4]

find(5.5): 5.5 >= 3 (left sum) -> go right with 5.5 - 3 = 2.5; 2.5 < 3 -> leaf 2.

Invariants:
- every internal node equals the sum of its two children, recomputed from the children on each
  update (never incremented by a delta), so rounding errors cannot accumulate;
- padding leaves (capacity <= i < P) hold 0 and are never returned by `find`;
- a leaf of mass 0 is never returned by `find` while the total is positive: the descent refuses a
  child whose sum is 0, which also covers a query that rounding pushed onto a segment edge.

The optional min tree stores, per node, the minimum over its leaves of the *positive* masses
(+inf for empty or zero leaves); its root is the smallest sampleable mass, which gives the largest
possible importance-sampling weight (global normalisation, as in the paper and OpenAI baselines).

Memory: both trees live in one (2P, 2) array, `nodes[j] = (sum_j, min_j)`, aligned so that a
pair of siblings (4 float64, 32 bytes) shares one 64-byte cache line. A descent reads the sums;
the mins of the same siblings come into cache with them, so the update that follows a sample
(the learner writes back the priorities it just drew) finds its min-tree nodes there too. With
separate arrays, each updated level of a large tree costs a second cache miss. `sum_nodes` and
`min_nodes` are views of the two columns.

Complexity: `update` of B leaves and `find` of B queries are O(B log N), compiled with numba; both
walk all B paths one tree level at a time, so the B independent memory loads of a level overlap,
and a descent prefetches the line its next level reads (`descend_from`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rdqn.replay.checks import check_magnitudes, check_slots
from rdqn.replay.kernels.compiled import inlined, kernel, prefetch, refcounted
from rdqn.replay.sizes import check_nbytes, leaf_offset, sum_tree_nbytes
from rdqn.replay.state_checks import described, found, refuse
from rdqn.validation import check_integer

__all__ = ["SumTree"]


def aligned_nodes(count: int, width: int, fill: float) -> NDArray[np.float64]:
    """A C-contiguous (count, width) float64 array filled with `fill` whose first byte is on a
    64-byte boundary (NumPy only promises 16), so that node pairs (2j, 2j + 1) never straddle two
    cache lines."""
    spare = 64 // 8
    flat = np.full(count * width + spare, fill, dtype=np.float64)
    start = (-flat.ctypes.data % 64) // 8
    return flat[start : start + count * width].reshape(count, width)


@kernel
def update_tree_kernel(
    nodes: NDArray[np.float64],
    offset: int,
    indices: NDArray[np.int64],
    masses: NDArray[np.float64],
) -> None:
    """Write `masses` at leaves `indices` (last write wins), then recompute their ancestors.

    `nodes[:, 0]` is the sum tree; a second column, when there is one, the min tree.
    """
    n = indices.shape[0]
    track_min = nodes.shape[1] == 2
    for k in range(n):
        leaf = indices[k] + offset
        nodes[leaf, 0] = masses[k]
        if track_min:
            nodes[leaf, 1] = masses[k] if masses[k] > 0.0 else np.inf
    if n == 0:
        return
    # All leaves sit at the same depth, so all paths reach the root together: a leaf's ancestor
    # `up` levels above it is (leaf >> up). Paths of sorted indices (a stratified batch) merge
    # near the root: a node equal to the previous one is recomputed only once. From the level
    # with no more nodes than paths up, every node is recomputed, children before parents
    # (higher index first): fewer steps than n paths.
    level = offset >> 1
    up = 1
    while level > n:
        previous = -1
        for k in range(n):
            j = (indices[k] + offset) >> up
            if j != previous:
                nodes[j, 0] = nodes[2 * j, 0] + nodes[2 * j + 1, 0]
                if track_min:
                    nodes[j, 1] = min(nodes[2 * j, 1], nodes[2 * j + 1, 1])
                previous = j
        level >>= 1
        up += 1
    for j in range(2 * level - 1, 0, -1):
        nodes[j, 0] = nodes[2 * j, 0] + nodes[2 * j + 1, 0]
        if track_min:
            nodes[j, 1] = min(nodes[2 * j, 1], nodes[2 * j + 1, 1])


@inlined
def descend_from(
    nodes: NDArray[np.float64],
    offset: int,
    found: NDArray[np.int64],
    remaining: NDArray[np.float64],
    level: int,
) -> NDArray[np.int64]:
    """Carry on descents that stand at nodes `found` of the level whose first node is `level`,
    with masses `remaining` left to skip inside them, down to the leaves (updated in place).

    At node j a descent reads its children 2j and 2j + 1; whichever it takes, the next level
    reads nodes 4j..4j + 3, which share one 64-byte line (`aligned_nodes`): that line is
    prefetched before the comparison, so each descent keeps two levels' loads in flight, which
    counts on a tree larger than the caches; a second line, two levels ahead, costs more than it
    saves."""
    n = found.shape[0]
    flat = nodes.reshape(-1)  # the prefetch takes a flat index: node m's sum is at 2m
    last = flat.shape[0] - 1
    while level < offset:
        for k in range(n):
            j = found[k]
            prefetch(flat, min(8 * j, last))
            left = nodes[2 * j, 0]
            right = nodes[2 * j + 1, 0]
            # Branch-free: go right when the mass lies past the left subtree (and the right
            # subtree has mass) or when the left subtree is empty.
            go_right = ((remaining[k] >= left) & (right > 0.0)) | (left <= 0.0)
            remaining[k] -= left * go_right
            found[k] = 2 * j + go_right
        level *= 2
    return found


@inlined
def descend(nodes: NDArray[np.float64], offset: int, masses: NDArray[np.float64]) -> NDArray:
    """Return the tree node of the leaf owning each prefix mass (cumsum[i-1] <= m < cumsum[i])."""
    return descend_from(nodes, offset, np.ones(masses.shape[0], np.int64), masses.copy(), 1)


@inlined
def descend_sorted(
    nodes: NDArray[np.float64],
    offset: int,
    masses: NDArray[np.float64],
    found: NDArray[np.int64],
    remaining: NDArray[np.float64],
) -> NDArray[np.int64]:
    """`descend` for ascending masses (a stratified batch), with the top of the tree replaced by
    one merge: on the level of W >= B nodes (B = len(masses), W capped at the leaves), one
    left-to-right walk with a running prefix sum finds every mass's node in O(W + B) instead of
    B log2(W) steps down from the root. Empty nodes are skipped; a mass past the last positive
    node (rounding at the top edge) stays in it. The descents then go on as in `descend`, so
    the same rules hold: never a zero-mass leaf, never a padding leaf.

    The leaves' nodes go to `found` (returned), the work space is `remaining`; both have the
    masses' length, and `remaining` may be `masses` itself (the caller's arrays: a sample
    allocates nothing more)."""
    n = masses.shape[0]
    width = 1
    while width < n and width < offset:
        width *= 2
    last = 2 * width - 1
    while last > width and nodes[last, 0] <= 0.0:
        last -= 1
    node = width
    before = 0.0
    for k in range(n):
        mass = masses[k]
        while node < last and (nodes[node, 0] <= 0.0 or mass >= before + nodes[node, 0]):
            before += nodes[node, 0]
            node += 1
        found[k] = node
        remaining[k] = mass - before
    return descend_from(nodes, offset, found, remaining, width)


@refcounted
def find_kernel(
    nodes: NDArray[np.float64], offset: int, masses: NDArray[np.float64]
) -> NDArray[np.int64]:
    return descend(nodes, offset, masses) - offset


def _check_internal(
    name: str, nodes: NDArray[np.float64], offset: int, expected: NDArray[np.float64]
) -> None:
    """Internal nodes j = 1 .. offset - 1 equal ``expected[j - 1]``, computed from their
    children. The deepest node that does not is named: a corrupt node disagrees with its
    children and with its parent, so the deepest disagreement is the node itself, or the
    parent of a corrupt leaf."""
    wrong = np.flatnonzero(nodes[1:offset] != expected)
    if wrong.size:
        j = int(wrong[-1]) + 1
        refuse(
            f"{name}[{j}] is {nodes[j]}, but its children {2 * j} and {2 * j + 1} give "
            f"{expected[j - 1]}: the tree is corrupt"
        )


class SumTree:
    """A float64 sum tree over `capacity` leaves, optionally with a min tree beside it.

    Args:
        capacity: number of leaves (> 0).
        track_min: also maintain the minimum positive leaf (see `min`).
    """

    def __init__(self, capacity: int, *, track_min: bool = True) -> None:
        self.capacity = check_integer("capacity", capacity, minimum=1)
        check_nbytes(
            f"SumTree of capacity {self.capacity:,}",
            sum_tree_nbytes(self.capacity, track_min),
            advice="choose a smaller capacity",
        )
        self.offset = leaf_offset(self.capacity)
        self.nodes = aligned_nodes(2 * self.offset, 2 if track_min else 1, 0.0)
        if track_min:
            self.nodes[:, 1] = np.inf

    @property
    def sum_nodes(self) -> NDArray[np.float64]:
        """The sum tree: node j's sum (a view)."""
        return self.nodes[:, 0]

    @property
    def min_nodes(self) -> NDArray[np.float64]:
        """The min tree: node j's smallest positive leaf mass (a view; empty without it)."""
        return self.nodes[:, 1] if self.nodes.shape[1] == 2 else np.empty(0, dtype=np.float64)

    @property
    def total(self) -> float:
        """Sum of all leaf masses (the root)."""
        return float(self.nodes[1, 0])

    @property
    def min(self) -> float:
        """Smallest positive leaf mass; +inf when no leaf is positive."""
        if self.nodes.shape[1] != 2:
            raise RuntimeError("this SumTree was built with track_min=False")
        return float(self.nodes[1, 1])

    @property
    def nbytes(self) -> int:
        return int(self.nodes.nbytes)

    def _check_indices(self, indices: ArrayLike) -> NDArray[np.int64]:
        return check_slots("indices", np.asarray(indices).reshape(-1), self.capacity)

    def update(self, indices: ArrayLike, values: ArrayLike) -> None:
        """Set leaves `indices` to `values` (>= 0, finite); duplicates: the last write wins."""
        idx = self._check_indices(indices)
        try:
            flat = np.asarray(values, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as err:
            raise ValueError(f"values must be real numbers ({err})") from None
        vals = np.ascontiguousarray(check_magnitudes("values", flat, idx.size))
        update_tree_kernel(self.nodes, self.offset, idx, vals)

    def find(self, masses: ArrayLike) -> NDArray[np.int64]:
        """Leaf index owning each prefix mass m in [0, total): cumsum[i-1] <= m < cumsum[i].

        A query on an edge that rounding made unreachable lands on the nearest positive leaf.
        """
        total = self.total
        if not total > 0.0:
            raise ValueError(f"cannot search a tree whose total mass is {total}")
        try:
            m = np.ascontiguousarray(masses, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as err:
            raise ValueError(f"masses must be real numbers ({err})") from None
        if m.size and not ((m >= 0).all() and (m <= total).all()):
            bad = m[~((m >= 0) & (m <= total))][0]
            raise ValueError(f"masses must be in [0, total={total}], got {bad}")
        return find_kernel(self.nodes, self.offset, m)

    def __getitem__(self, indices: ArrayLike) -> NDArray[np.float64] | float:
        """Read leaf masses."""
        if np.isscalar(indices):
            return float(self.nodes[self._check_indices([indices])[0] + self.offset, 0])
        return self.nodes[self._check_indices(indices) + self.offset, 0]

    def leaves(self, size: int | None = None) -> NDArray[np.float64]:
        """A copy of the first `size` (default: all) leaf masses."""
        n = (
            self.capacity
            if size is None
            else check_integer("size", size, minimum=0, maximum=self.capacity)
        )
        return self.nodes[self.offset : self.offset + n, 0].copy()

    def check_nodes(self, sum_nodes: object, min_nodes: object) -> None:
        """`ReplayStateError` unless ``sum_nodes`` and ``min_nodes`` (as `sum_nodes` and
        `min_nodes` return them, from a saved state) are a tree this one can load, whose
        descents and updates stay inside it:

        - float64 arrays of this tree's 2P nodes (``min_nodes`` empty without a min tree);
        - leaves finite and >= 0, padding leaves 0 (so no descent ends past the capacity);
        - every internal node exactly the sum of its children, bit for bit: the update kernel
          recomputes each node from its children, never adding a difference, so a saved tree
          satisfies this exactly, and a node off by one bit is corrupt (a descent that trusts a
          positive node over empty leaves walks into padding); a finite total;
        - the min tree: each leaf its sum leaf if positive, else +inf; each internal node the
          minimum of its children.

        Node 0 is not part of the tree and is not checked (nor loaded)."""
        width = self.nodes.shape[1]
        for name, nodes, count in (
            ("sum_nodes", sum_nodes, 2 * self.offset),
            ("min_nodes", min_nodes, 2 * self.offset if width == 2 else 0),
        ):
            if not (
                isinstance(nodes, np.ndarray)
                and nodes.dtype == np.float64
                and nodes.dtype.isnative
                and nodes.shape == (count,)
            ):
                expected = described(np.dtype(np.float64), (count,))
                refuse(f"{name} must be {expected}, got {found(nodes)}")
        assert isinstance(sum_nodes, np.ndarray) and isinstance(min_nodes, np.ndarray)
        p, n = self.offset, self.capacity
        leaves = sum_nodes[p : 2 * p]
        bad = ~(np.isfinite(leaves) & (leaves >= 0.0))
        bad[n:] |= leaves[n:] != 0.0
        if bad.any():
            k = int(np.argmax(bad))
            what = "finite and >= 0" if k < n else "0 (a padding leaf, past the capacity)"
            refuse(f"sum_nodes[{p + k}] (leaf {k}) is {leaves[k]}; it must be {what}")
        with np.errstate(over="ignore"):  # an overflowing total is refused just below
            children = sum_nodes[2 : 2 * p : 2] + sum_nodes[3::2]
        _check_internal("sum_nodes", sum_nodes, p, children)
        if not np.isfinite(sum_nodes[1]):
            refuse(f"sum_nodes[1], the total, is {sum_nodes[1]}: the masses overflow float64")
        if width == 2:
            expected = np.where(leaves > 0.0, leaves, np.inf)
            wrong = min_nodes[p : 2 * p] != expected
            if wrong.any():
                k = int(np.argmax(wrong))
                refuse(
                    f"leaf {k} differs between sum_nodes[{p + k}], {leaves[k]}, and "
                    f"min_nodes[{p + k}], {min_nodes[p + k]}: the min tree holds the leaf's "
                    "mass too (inf for 0)"
                )
            smaller = np.minimum(min_nodes[2 : 2 * p : 2], min_nodes[3::2])
            _check_internal("min_nodes", min_nodes, p, smaller)

    def levels(self, depth: int) -> list[NDArray[np.float64]]:
        """The top `depth` levels of the tree, root first (for visualisation)."""
        out = []
        for d in range(depth):
            start = 1 << d
            if start >= 2 * self.offset:
                break
            out.append(self.nodes[start : 2 * start, 0].copy())
        return out
