"""Sum-tree figures: padding leaves and empty slots are drawn as such, never as bare zeros."""

from __future__ import annotations

import numpy as np
import pytest

from rdqn.classroom.tree_demo import tree_leaf_count
from rdqn.figures import sum_tree_figure, tree_levels_figure
from rdqn.figures.tree import EMPTY, PADDING
from rdqn.replay import SumTree


def named(fig, name: str):  # noqa: ANN001, ANN201
    (match,) = [t for t in fig.data if t.name == name]
    return match


def live_levels(capacity: int, size: int, depth: int = 5) -> list[np.ndarray]:
    tree = SumTree(capacity)
    tree.update(np.arange(size), np.ones(size))
    return tree.levels(depth)


def test_live_tree_marks_padding_past_the_capacity_and_slots_not_filled_yet() -> None:
    """Capacity 10,000: 16,384 leaves, 1,024 slots per node of level 4. Slots 10,000.. are
    padding (nodes 26-31, 13-15, 7); with 3,000 stored, slots 3,000..9,999 are empty."""
    fig = tree_levels_figure(live_levels(10_000, 3_000), capacity=10_000, size=3_000)
    padding, empty = named(fig, PADDING), named(fig, EMPTY)
    assert sorted(padding.customdata) == [7, 13, 14, 15, 26, 27, 28, 29, 30, 31]
    assert sorted(empty.customdata) == [3, 5, 6, 10, 11, 12, 19, 20, 21, 22, 23, 24, 25]
    assert set(padding.text) == {"pad"} and set(empty.text) == {"empty"}
    assert padding.marker.symbol == "square" and padding.showlegend and empty.showlegend
    assert fig.layout.showlegend
    assert "padding past the capacity of 10,000" in padding.hovertext[0]
    # Every other node holds mass: none is a bare 0.
    assert "0" not in named(fig, "nodes").text


def test_a_full_buffer_has_padding_but_nothing_empty() -> None:
    fig = tree_levels_figure(live_levels(12, 12, depth=5), capacity=12, size=12)
    assert [t.name for t in fig.data if t.name == EMPTY] == []
    # Capacity 12 fits in 16 leaves: the bottom level is the leaves, 12..15 are padding.
    assert sorted(named(fig, PADDING).customdata) == [7, 14, 15, 28, 29, 30, 31]
    assert fig.layout.yaxis.ticktext[-1] == "leaves"


def test_demo_tree_labels_its_padding_leaves() -> None:
    fig = sum_tree_figure(np.ones(12))
    padding = named(fig, PADDING)
    assert sorted(padding.customdata) == [7, 14, 15, 28, 29, 30, 31]
    assert set(padding.text) == {"pad"} and fig.layout.showlegend
    assert not sum_tree_figure(np.ones(8)).layout.showlegend  # a power of two needs no padding


def test_tree_leaf_count_is_the_sum_tree_s() -> None:
    for capacity in (1, 2, 3, 12, 16, 17, 10_000, 50_000):
        assert tree_leaf_count(capacity) == SumTree(capacity).offset
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        tree_leaf_count(0)


def test_levels_deeper_than_the_tree_are_an_error() -> None:
    with pytest.raises(ValueError, match="capacity 4 has 4 leaves, fewer than the 8"):
        tree_levels_figure([np.ones(1), np.ones(2), np.ones(4), np.ones(8)], capacity=4)
