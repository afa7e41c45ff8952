"""SumTree: hand-computed trees, exact parent sums, edge queries and a property test vs NumPy."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.replay import SumTree
from rdqn.replay.sumtree import descend_sorted


@pytest.fixture
def tree4() -> SumTree:
    """Capacity 4, masses [1, 2, 3, 4]::

                     [1] 10
                   /        \\
             [2] 3            [3] 7
             /    \\          /    \\
          [4] 1  [5] 2    [6] 3  [7] 4      array: [_, 10, 3, 7, 1, 2, 3, 4]

    Leaf i owns the prefix masses [cumsum[i-1], cumsum[i]): 0 -> [0, 1), 1 -> [1, 3),
    2 -> [3, 6), 3 -> [6, 10).
    """
    tree = SumTree(4)
    tree.update(np.arange(4), [1.0, 2.0, 3.0, 4.0])
    return tree


def test_hand_computed_four_leaf_layout(tree4: SumTree) -> None:
    assert tree4.offset == 4
    np.testing.assert_array_equal(tree4.sum_nodes[1:], [10.0, 3.0, 7.0, 1.0, 2.0, 3.0, 4.0])
    # min tree: the same shape holding minima: [_, 1, 1, 3, 1, 2, 3, 4]
    np.testing.assert_array_equal(tree4.min_nodes[1:], [1.0, 1.0, 3.0, 1.0, 2.0, 3.0, 4.0])
    assert tree4.total == 10.0
    assert tree4.min == 1.0


@pytest.mark.parametrize(
    ("mass", "leaf"),
    [
        (0.0, 0),
        (0.999, 0),
        (1.0, 1),  # exactly on the edge cumsum[0] = 1 belongs to the next leaf
        (2.9999, 1),
        (3.0, 2),
        (5.5, 2),  # 5.5 >= 3 -> right with 2.5; 2.5 < 3 -> leaf 2
        (6.0, 3),
        (9.999, 3),
    ],
)
def test_find_hand_computed(tree4: SumTree, mass: float, leaf: int) -> None:
    assert tree4.find([mass]).tolist() == [leaf]


def test_find_is_vectorized(tree4: SumTree) -> None:
    masses = [0.0, 0.999, 1.0, 2.9999, 3.0, 5.5, 6.0, 9.999]
    result = tree4.find(masses)
    assert result.dtype == np.int64
    assert result.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_find_at_total_returns_last_positive_leaf(tree4: SumTree) -> None:
    """m == total is accepted (stratified queries can round up onto it) and lands on leaf 3."""
    assert tree4.find([10.0]).tolist() == [3]
    tree4.update([3], [0.0])  # now total 6 and leaf 3 is empty
    assert tree4.find([6.0]).tolist() == [2]


def test_reads_leaves_and_levels(tree4: SumTree) -> None:
    assert tree4[2] == 3.0
    assert isinstance(tree4[np.int64(1)], float)
    np.testing.assert_array_equal(tree4[[3, 0]], [4.0, 1.0])
    leaves = tree4.leaves()
    np.testing.assert_array_equal(leaves, [1.0, 2.0, 3.0, 4.0])
    leaves[0] = 99.0  # a copy: the tree is unaffected
    assert tree4[0] == 1.0
    np.testing.assert_array_equal(tree4.leaves(2), [1.0, 2.0])
    levels = tree4.levels(3)
    assert [lv.tolist() for lv in levels] == [[10.0], [3.0, 7.0], [1.0, 2.0, 3.0, 4.0]]
    assert [lv.tolist() for lv in tree4.levels(1)] == [[10.0]]
    assert len(tree4.levels(10)) == 3  # no levels below the leaves


def test_min_is_smallest_positive_leaf_and_inf_when_empty() -> None:
    tree = SumTree(6)
    assert tree.min == math.inf
    assert tree.total == 0.0
    tree.update([0, 1, 2], [0.0, 5.0, 2.5])
    assert tree.min == 2.5  # the zero leaf is excluded
    tree.update([2], [0.0])
    assert tree.min == 5.0
    tree.update([1], [0.0])
    assert tree.min == math.inf
    assert tree.total == 0.0


def test_min_requires_track_min() -> None:
    tree = SumTree(4, track_min=False)
    tree.update([0, 1], [1.0, 2.0])
    assert tree.total == 3.0
    with pytest.raises(RuntimeError, match="track_min"):
        _ = tree.min


@pytest.mark.parametrize("capacity", [5, 1])
def test_non_power_of_two_capacity_never_returns_padding(capacity: int) -> None:
    """Capacity 5 pads to 8 leaves (5, 6, 7 hold 0); capacity 1 is a root-only tree.

    Capacity 5, masses [1, 1, 1, 1, 1]::

                        [1] 5
                  /               \\
             [2] 4                  [3] 1
            /     \\              /       \\
        [4] 2      [5] 2      [6] 1       [7] 0
        /  \\      /  \\      /  \\      /  \\
       1    1    1    1    1    0(pad) 0    0
    """
    tree = SumTree(capacity)
    tree.update(np.arange(capacity), np.ones(capacity))
    assert tree.total == capacity
    queries = np.concatenate([np.linspace(0.0, capacity, 1001), [capacity - 1e-12]])
    found = tree.find(queries)
    assert found.min() >= 0 and found.max() == capacity - 1
    expected = np.minimum(np.floor(queries), capacity - 1).astype(np.int64)
    np.testing.assert_array_equal(found, expected)
    assert len(tree.leaves()) == capacity


def test_capacity_one_is_root_only() -> None:
    tree = SumTree(1)
    tree.update([0], [2.5])
    assert tree.total == 2.5 and tree.min == 2.5 and tree[0] == 2.5
    assert tree.find([0.0, 1.0, 2.5]).tolist() == [0, 0, 0]
    assert [lv.tolist() for lv in tree.levels(4)] == [[2.5]]


def test_only_last_leaf_nonzero() -> None:
    """Every query, including 0 and the total, must go to the one positive leaf."""
    for capacity in (5, 8):
        tree = SumTree(capacity)
        tree.update([capacity - 1], [7.0])
        found = tree.find(np.linspace(0.0, 7.0, 57))
        assert set(found.tolist()) == {capacity - 1}
        assert tree.min == 7.0


def test_zero_leaves_are_never_found() -> None:
    """Masses [0, 2, 0, 0, 3, 0]: edges at 0, 2 and 5 go to the positive leaves 1 and 4."""
    tree = SumTree(6)
    tree.update(np.arange(6), [0.0, 2.0, 0.0, 0.0, 3.0, 0.0])
    assert tree.find([0.0, 1.999, 2.0, 4.999, 5.0]).tolist() == [1, 1, 4, 4, 4]


def test_tiny_and_huge_masses_mixed() -> None:
    """Leaves [1e-300, 1e300, 1e-300, 1e300]: the tiny leaves are absorbed by the sums.

    Left sum fl(1e-300 + 1e300) = 1e300, so a query inside [0, 1e-300) still reaches leaf 0 and
    the min tree keeps 1e-300 exactly, but the query 1e300 sits on an edge that rounding made
    ambiguous: leaf 1 (exact arithmetic) or leaf 2 (rounded sums) are both positive leaves.
    """
    tree = SumTree(4)
    tree.update(np.arange(4), [1e-300, 1e300, 1e-300, 1e300])
    assert tree.total == 2e300
    assert tree.min == 1e-300
    assert tree.find([0.0, 5e-301, 1e-300, 1e299, 1.5e300, 2e300]).tolist() == [0, 0, 1, 1, 3, 3]
    assert tree.find([1e300]).tolist()[0] in (1, 2)


def test_regression_duplicate_indices_last_write_wins() -> None:
    """One vectorized update writing leaf 1 three times keeps the last value, and the parents
    are recomputed from the final leaves (tree [_, 12, 8, 4, 1, 7, 4, 0])."""
    tree = SumTree(4)
    tree.update([0, 1, 2, 1, 1], [1.0, 5.0, 4.0, 6.0, 7.0])
    np.testing.assert_array_equal(tree.sum_nodes[1:], [12.0, 8.0, 4.0, 1.0, 7.0, 4.0, 0.0])
    assert tree[1] == 7.0
    assert tree.min == 1.0


def test_parents_recomputed_exactly_after_many_updates() -> None:
    """10,000 random (duplicate-laden) leaf writes of very different magnitudes: every internal
    node must equal left + right exactly (recomputed, never incremented, so no drift) and the root
    must match an exactly rounded sum of the leaves to 1e-12 relative."""
    rng = np.random.default_rng(1234)
    capacity = 1000
    tree = SumTree(capacity)
    naive = np.zeros(capacity)
    for _ in range(100):
        idx = rng.integers(0, capacity, 100)
        vals = rng.lognormal(0.0, 4.0, 100) * (rng.random(100) > 0.1)
        tree.update(idx, vals)
        for i, v in zip(idx, vals, strict=True):
            naive[i] = v
    np.testing.assert_array_equal(tree.leaves(), naive)
    internal = np.arange(1, tree.offset)
    np.testing.assert_array_equal(
        tree.sum_nodes[internal], tree.sum_nodes[2 * internal] + tree.sum_nodes[2 * internal + 1]
    )
    np.testing.assert_array_equal(
        tree.min_nodes[internal],
        np.minimum(tree.min_nodes[2 * internal], tree.min_nodes[2 * internal + 1]),
    )
    assert tree.total == pytest.approx(math.fsum(naive), rel=1e-12)
    assert tree.min == naive[naive > 0].min()


def test_update_with_no_indices_is_a_no_op(tree4: SumTree) -> None:
    before = tree4.sum_nodes.copy()
    tree4.update(np.array([], dtype=np.int64), np.array([]))
    np.testing.assert_array_equal(tree4.sum_nodes, before)


@pytest.mark.parametrize("capacity", [0, -1, 1.5, True, "4", None])
def test_bad_capacity(capacity: object) -> None:
    with pytest.raises(ValueError, match="capacity"):
        SumTree(capacity)  # type: ignore[arg-type]


def test_numpy_integer_capacity_is_accepted() -> None:
    assert SumTree(np.int64(3)).capacity == 3


@pytest.mark.parametrize(
    ("indices", "values", "match"),
    [
        ([0], [-1.0], "values"),
        ([0], [np.nan], "values"),
        ([0], [np.inf], "values"),
        ([0, 1], [1.0, np.nan], "values"),
        ([0, 1], [1.0], "values"),
        ([0], [1.0, 2.0], "values"),
        ([4], [1.0], "indices"),
        ([-1], [1.0], "indices"),
        ([0.5], [1.0], "indices"),
        ([True], [1.0], "indices"),
    ],
)
def test_bad_update_raises_and_leaves_tree_unchanged(
    tree4: SumTree, indices: list, values: list, match: str
) -> None:
    before_sum, before_min = tree4.sum_nodes.copy(), tree4.min_nodes.copy()
    with pytest.raises(ValueError, match=match):
        tree4.update(indices, values)
    np.testing.assert_array_equal(tree4.sum_nodes, before_sum)
    np.testing.assert_array_equal(tree4.min_nodes, before_min)


@pytest.mark.parametrize("masses", [[-1.0], [np.nan], [10.5], [0.0, 11.0]])
def test_bad_find_queries(tree4: SumTree, masses: list) -> None:
    with pytest.raises(ValueError, match="masses"):
        tree4.find(masses)


def test_find_on_empty_tree_raises() -> None:
    tree = SumTree(4)
    with pytest.raises(ValueError, match="total"):
        tree.find([0.0])
    tree.update([0, 1], [0.0, 0.0])
    with pytest.raises(ValueError, match="total"):
        tree.find([0.0])


@pytest.mark.parametrize("index", [4, -1, [0, 7]])
def test_bad_reads(tree4: SumTree, index: object) -> None:
    with pytest.raises(ValueError, match="indices"):
        tree4[index]  # type: ignore[index]


# ---------------------------------------------------------------- property tests vs a NumPy array

_updates = st.lists(
    st.tuples(st.integers(0, 10**6), st.integers(0, 1000)),  # (raw index, integer mass)
    min_size=1,
    max_size=40,
)


@settings(deadline=None, max_examples=150, derandomize=True)
@given(
    capacity=st.integers(1, 70),
    batches=st.lists(_updates, min_size=1, max_size=6),
    fractions=st.lists(st.floats(0.0, 1.0, exclude_max=True), min_size=1, max_size=30),
)
def test_find_matches_naive_cumsum_exactly(
    capacity: int, batches: list[list[tuple[int, int]]], fractions: list[float]
) -> None:
    """Integer masses make every tree sum exact, so the owner of m must satisfy
    cumsum[i-1] <= m < cumsum[i] with no slack (edges included: m = cumsum[j] is queried too)."""
    tree = SumTree(capacity)
    naive = np.zeros(capacity)
    for batch in batches:
        idx = np.array([i % capacity for i, _ in batch], dtype=np.int64)
        vals = np.array([v for _, v in batch], dtype=np.float64)
        tree.update(idx, vals)
        for i, v in zip(idx, vals, strict=True):
            naive[i] = v  # sequential writes: the last one wins
    np.testing.assert_array_equal(tree.leaves(), naive)
    total = naive.sum()
    assert tree.total == total
    positive = naive[naive > 0]
    assert tree.min == (positive.min() if positive.size else math.inf)
    if total == 0:
        return
    cumsum = np.cumsum(naive)
    before = cumsum - naive
    edges = cumsum[cumsum < total]
    queries = np.concatenate([np.array(fractions) * total, edges, [0.0]])
    found = tree.find(queries)
    assert ((found >= 0) & (found < capacity)).all()
    assert (naive[found] > 0).all()
    assert (before[found] <= queries).all() and (queries < cumsum[found]).all()
    # m == total: the last positive leaf.
    assert tree.find([total]).tolist() == [int(np.flatnonzero(naive)[-1])]


@settings(deadline=None, max_examples=100, derandomize=True)
@given(
    capacity=st.integers(1, 70),
    masses=st.lists(
        st.one_of(
            st.just(0.0),
            st.floats(1e-12, 1e12, allow_nan=False, allow_infinity=False),
        ),
        min_size=1,
        max_size=70,
    ),
    fractions=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30),
)
def test_find_with_arbitrary_floats_never_returns_zero_or_padding(
    capacity: int, masses: list[float], fractions: list[float]
) -> None:
    """With rounding in the sums the prefix interval is checked to 1e-12 * total, but the hard
    guarantees have no slack: never an index >= capacity, never a zero-mass leaf."""
    vals = np.array(masses[:capacity])
    tree = SumTree(capacity)
    tree.update(np.arange(vals.size), vals)
    naive = np.zeros(capacity)
    naive[: vals.size] = vals
    if naive.sum() == 0:
        return
    total = tree.total
    assert total == pytest.approx(math.fsum(naive), rel=1e-12)
    queries = np.minimum(np.array(fractions) * total, total)
    found = tree.find(queries)
    assert ((found >= 0) & (found < capacity)).all()
    assert (naive[found] > 0).all()
    cumsum = np.cumsum(naive)
    tol = 1e-12 * total
    assert (cumsum[found] - naive[found] - tol <= queries).all()
    assert (queries <= cumsum[found] + tol).all()


@numba.njit(cache=False)
def _find_sorted(nodes: np.ndarray, offset: int, masses: np.ndarray) -> np.ndarray:
    found = np.empty(masses.shape[0], np.int64)
    return descend_sorted(nodes, offset, masses, found, masses.copy()) - offset


@settings(deadline=None, max_examples=150, derandomize=True)
@given(
    capacity=st.integers(1, 300),
    batches=st.lists(_updates, min_size=1, max_size=6),
    fractions=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=200),
)
def test_the_sorted_merge_finds_what_the_descent_finds(
    capacity: int, batches: list[list[tuple[int, int]]], fractions: list[float]
) -> None:
    """The sampler's `descend_sorted` (a merge over the level of about B nodes, then descents)
    returns the same leaves as `find` for ascending masses: integer masses make every sum exact,
    so edges (m = cumsum[j]), zero-mass runs, the total and batches wider or narrower than that
    level are all compared without slack."""
    tree = SumTree(capacity)
    for batch in batches:
        tree.update([i % capacity for i, _ in batch], [v for _, v in batch])
    total = tree.total
    if total == 0:
        return
    cumsum = np.cumsum(tree.leaves())
    queries = np.sort(np.concatenate([np.array(fractions) * total, cumsum, [0.0, total]]))
    queries = queries[queries <= total]
    np.testing.assert_array_equal(
        _find_sorted(tree.nodes, tree.offset, queries), tree.find(queries)
    )
