"""rdqn.classroom.tree_demo: the sum-tree demo helpers checked against arithmetic written out
here and against `rdqn.replay.SumTree`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rdqn.classroom import tree_demo as td
from rdqn.replay import SumTree


def test_leaf_table_by_hand() -> None:
    """Priorities (4, 1, 0, 1), alpha 0.5: masses (2, 1, 0, 1), total 4, P = (.5, .25, 0, .25);
    beta 1: (N P)^-1 = (0.5, 1, -, 1), normalised by 1; leaf 2 is never sampled (NaN weight)."""
    table = td.leaf_table([4.0, 1.0, 0.0, 1.0], alpha=0.5, beta=1.0)
    np.testing.assert_allclose(table["mass"], [2.0, 1.0, 0.0, 1.0])
    np.testing.assert_allclose(table["probability"], [0.5, 0.25, 0.0, 0.25])
    np.testing.assert_allclose(table["weight"], [0.5, 1.0, np.nan, 1.0])


def test_leaf_table_alpha_zero_is_uniform_even_for_zero_priority() -> None:
    table = td.leaf_table([4.0, 1.0, 0.0, 1.0], alpha=0.0, beta=0.4)
    np.testing.assert_allclose(table["probability"], [0.25] * 4)
    np.testing.assert_allclose(table["weight"], [1.0] * 4)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([1.0, -1.0, 2.0], r"bad cell: leaf 1 \(-1.0\)"),
        ([1.0, None, "x"], r"bad cells: leaf 1 \(an empty cell\), leaf 2 \('x'\)"),
        ([math.inf, 1.0], r"leaf 0 \(inf\)"),
        ([2e6, 1.0], r"numbers in \[0, 1e\+06\]; bad cell: leaf 0 \(2000000.0\)"),
        ([0.0, 0.0], r"at least one priority must be > 0"),
        ([], r"must not be empty"),
    ],
)
def test_check_priorities_names_bad_leaves(values: list[object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        td.check_priorities(values)


def test_check_priorities_accepts_numbers_and_numeric_text() -> None:
    np.testing.assert_array_equal(td.check_priorities([1, "2.5", 0.0]), [1.0, 2.5, 0.0])


def test_default_and_random_priorities() -> None:
    assert td.default_priorities(8).tolist() == [3.0, 0.5, 1.0, 0.2, 2.0, 0.8, 0.1, 1.5]
    assert td.default_priorities(12).size == 12
    a = td.random_priorities(64, np.random.default_rng(1))
    b = td.random_priorities(64, np.random.default_rng(1))
    np.testing.assert_array_equal(a, b)
    assert (a >= 0.01).all()
    td.check_priorities(a)


def test_descent_path_heap_layout() -> None:
    """Offset 8: leaf 5 is node 13; 13 >> 1 = 6, >> 2 = 3, >> 3 = 1."""
    assert td.descent_path(5, 8) == [1, 3, 6, 13]
    assert td.descent_path(0, 8) == [1, 2, 4, 8]
    assert td.descent_path(63, 64)[-1] == 127
    with pytest.raises(ValueError, match=r"leaf must be in \[0, 8\)"):
        td.descent_path(8, 8)


def test_draw_batch_uses_the_sum_tree() -> None:
    """Masses (1, 2, 3, 4), total 10, B = 2: segments [0, 5) and [5, 10).
    u = (0.5, 0.5) -> queries 2.5 (leaf 1 owns [1, 3)) and 7.5 (leaf 3 owns [6, 10))."""
    tree = td.build_tree([1.0, 2.0, 3.0, 4.0])
    assert isinstance(tree, SumTree)
    draw = td.draw_batch(tree, [0.5, 0.5])
    np.testing.assert_allclose(draw.queries, [2.5, 7.5])
    np.testing.assert_array_equal(draw.leaves, [1, 3])
    assert draw.paths == [[1, 2, 5], [1, 3, 7]]
    frame = draw.frame()
    assert frame["path"].tolist() == ["1 → 2 → 5", "1 → 3 → 7"]
    np.testing.assert_allclose(frame["segment from"], [0.0, 5.0])


def test_stratified_queries_one_per_segment_for_many_batches() -> None:
    """Total 10, B = 2 (last axis): segments [0, 5) and [5, 10); m_k = (k + u_k) * 5."""
    queries = td.stratified_queries(10.0, [[0.0, 0.5], [0.5, 0.0]])
    np.testing.assert_allclose(queries, [[0.0, 7.5], [2.5, 5.0]])


def test_stratified_queries_rejects_bad_uniforms() -> None:
    with pytest.raises(ValueError, match=r"uniforms must lie in \[0, 1\)"):
        td.stratified_queries(10.0, [0.5, 1.0])


def test_draw_counts_converge_to_p() -> None:
    """40,000 draws from P = (0.1, 0.2, 0.3, 0.4): every frequency within 0.01 (about 4 sigma)."""
    tree = td.build_tree([1.0, 2.0, 3.0, 4.0])
    counts = td.draw_counts(tree, 4, 10_000, np.random.default_rng(0))
    assert counts.sum() == 40_000
    np.testing.assert_allclose(counts / 40_000, [0.1, 0.2, 0.3, 0.4], atol=0.01)


def test_draw_counts_never_hit_zero_mass_leaves() -> None:
    tree = td.build_tree([1.0, 0.0, 3.0, 0.0, 5.0])
    counts = td.draw_counts(tree, 16, 200, np.random.default_rng(3))
    assert counts[1] == 0 and counts[3] == 0 and counts.sum() == 3200


def test_tally_accumulates_for_its_masses() -> None:
    tally = td.Tally.empty([1.0, 2.0])
    assert tally.total == 0 and tally.matches([1.0, 2.0]) and not tally.matches([1.0, 3.0])
    tally = tally.add([3, 1]).add(np.array([0, 4]))
    assert tally.counts == (3, 5) and tally.total == 8
    with pytest.raises(ValueError, match="counts must have 2 entries"):
        tally.add([1, 2, 3])


def test_tally_with_adds_counts_and_restarts_for_other_masses() -> None:
    first = td.tally_with(None, [1.0, 2.0], [1, 3])
    assert first.counts == (1, 3)
    assert td.tally_with(first, [1.0, 2.0], [2, 0]).counts == (3, 3)
    restarted = td.tally_with(first, [1.0, 5.0], [0, 2])  # alpha or a priority changed
    assert restarted.masses == (1.0, 5.0) and restarted.counts == (0, 2)


def test_importance_weights_by_hand() -> None:
    """P = [1/2, 1/4, 1/4, 0], N = 4, beta 1: (N P)^-1 = [1/2, 1, 1] (and NaN where P = 0);
    normalised by the largest (the least likely item's), [1/2, 1, 1]; beta 0.5 global:
    sqrt of those ratios, [1/sqrt 2, 1, 1]."""
    p = [0.5, 0.25, 0.25, 0.0]
    raw = td.importance_weights(p, 1.0, normalization="none")
    np.testing.assert_allclose(raw[:3], [0.5, 1.0, 1.0], rtol=1e-15)
    assert math.isnan(raw[3])
    np.testing.assert_allclose(td.importance_weights(p, 1.0)[:3], [0.5, 1.0, 1.0], rtol=1e-15)
    half = td.importance_weights(p, 0.5)
    np.testing.assert_allclose(half[:3], [2**-0.5, 1.0, 1.0], rtol=1e-15)
    with pytest.raises(ValueError, match="is_normalization"):
        td.importance_weights(p, 1.0, normalization="max")
