"""Sum-tree pictures: the tree node by node, or its top levels for a large one."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike, NDArray

from rdqn.classroom.tree_demo import tree_leaf_count
from rdqn.figures._base import (
    BASE_FONT_SIZE,
    EMPHASIS,
    HIGHLIGHT_FILL,
    MAX_LABELS_PER_LEVEL,
    MAX_TREE_LEAVES,
    PATH_PALETTE,
    _as_1d,
    _compact,
    _style,
    empty_figure,
)


def leaf_heap(leaf_masses: ArrayLike) -> tuple[NDArray[np.float64], int, int]:
    """(nodes, P, n): the leaves loaded into a real `rdqn.replay.SumTree` (heap layout: node 1 the
    root, leaf i at node P + i), so the drawing shows exactly what the library computes."""
    masses = _as_1d(leaf_masses)
    n = masses.size
    from rdqn.replay import SumTree  # compiled: loads when a tree is drawn

    tree = SumTree(max(n, 2), track_min=False)
    tree.update(np.arange(n), masses)
    return tree.sum_nodes.copy(), tree.offset, n


def _node_size(level_width: int) -> float:
    return float(np.clip(0.8 * 900.0 / level_width, 9.0, 48.0))


def _node_xy(node: int, leaves: int) -> tuple[float, int]:
    """Position of heap node `node`: x in leaf units (leaf i at x = i), y = depth (root 0)."""
    depth = node.bit_length() - 1
    span = leaves >> depth
    return (node - (1 << depth) + 0.5) * span - 0.5, depth


def _check_paths(paths: Sequence[Sequence[int]], node_count: int) -> list[list[int]]:
    checked = []
    for path in paths:
        ids = [int(j) for j in path]
        for j in ids:
            if not 1 <= j < node_count:
                raise ValueError(f"path nodes must be in [1, {node_count}), got {j}")
        for parent, child in zip(ids[:-1], ids[1:], strict=False):
            if child >> 1 != parent:
                raise ValueError(
                    f"path must go down the tree: node {child} is not a child of {parent}"
                )
        checked.append(ids)
    return checked


PADDING = "padding (always 0)"
"""Legend name of nodes that cover only slots past the capacity: the tree has a power-of-two
number of leaves, and the leaves past the capacity hold 0 for ever."""
EMPTY = "empty (not filled yet)"
"""Legend name of nodes that cover only slots the buffer has not filled yet: 0 for now."""


def _draw_tree(
    nodes: NDArray[np.float64],
    *,
    depth_count: int,
    leaf_level: bool,
    slots_per_node: int,
    capacity: int | None,
    size: int | None,
    paths: list[list[int]],
    highlight_leaves: set[int],
    show_values: bool,
    title: str,
) -> go.Figure:
    """Draw heap `nodes[1 : 2**depth_count]`; the bottom drawn level (leaves when `leaf_level`)
    has nodes of `slots_per_node` buffer slots each.

    A node whose slots all lie past `capacity` is padding (a grey square labelled "pad"); one
    whose slots all lie past `size` but within the capacity is empty (labelled "empty"); both
    hold 0 and get a legend entry saying why. Without `capacity`, nodes of sum 0 are drawn empty.
    """
    width = 1 << (depth_count - 1)
    node_count = 2 * width
    total = float(nodes[1])
    groups: dict[str, list[tuple[Any, ...]]] = {}

    def add(group: str, j: int, text: str, hover: str, fill: str) -> None:
        x, y = _node_xy(j, width)
        level_width = 1 << (j.bit_length() - 1)
        shown = text if show_values and level_width <= MAX_LABELS_PER_LEVEL else ""
        groups.setdefault(group, []).append((x, y, shown, hover, _node_size(level_width), fill, j))

    for j in range(1, node_count):
        depth = j.bit_length() - 1
        value = float(nodes[j])
        share = f"{value / total:.1%} of total" if total > 0 else "total is 0"
        is_leaf = leaf_level and depth == depth_count - 1
        span = (width >> depth) * slots_per_node
        first = (j - (1 << depth)) * span
        what = f"leaf {j - width} (node {j})" if is_leaf else f"node {j}"
        slots = f"slot {first}" if span == 1 else f"slots {first:,}–{first + span - 1:,}"
        if capacity is not None and first >= capacity:
            add(
                PADDING,
                j,
                "pad",
                f"{what}: {slots}<br>padding past the capacity of {capacity:,}:"
                "<br>always 0, never sampled",
                "#e6e6e6",
            )
        elif (size is not None and first >= size) or (capacity is None and value <= 0.0):
            filled = f" (the buffer holds {size:,})" if size is not None else ""
            add(
                EMPTY,
                j,
                "empty",
                f"{what}: {slots}<br>not filled yet{filled}:<br>0 for now",
                "#ffffff",
            )
        elif is_leaf:
            leaf = j - width
            fill = HIGHLIGHT_FILL if leaf in highlight_leaves else "#ffffff"
            hover = f"leaf {leaf} (node {j})<br>mass {value:.4g}<br>P = {share}"
            add("leaves", j, _compact(value), hover, fill)
        else:
            hover = f"{what}: {slots}<br>sum {value:.4g}<br>{share}"
            add("internal nodes" if leaf_level else "nodes", j, _compact(value), hover, "#e8ecf7")

    traces: list[dict[str, Any]] = []
    edge_x, edge_y = _segments(((j >> 1, j) for j in range(2, node_count)), width)
    traces.append(
        {
            "type": "scatter",
            "x": edge_x,
            "y": edge_y,
            "mode": "lines",
            "name": "edges",
            "line": {"color": "#c4c9d4", "width": 1.5},
            "hoverinfo": "skip",
            "showlegend": False,
        }
    )

    many = len(paths) > len(PATH_PALETTE)
    path_groups = [paths] if many else [[p] for p in paths]
    for k, group in enumerate(path_groups):
        color = EMPHASIS if many else PATH_PALETTE[k]
        steps = (step for path in group for step in zip(path[:-1], path[1:], strict=False))
        xs, ys = _segments(steps, width)
        if many:
            name = f"{len(paths)} paths"
        else:
            end = group[0][-1]
            name = f"path to leaf {end - width}" if end >= width else f"path to node {end}"
        traces.append(
            {
                "type": "scatter",
                "x": xs,
                "y": ys,
                "mode": "lines",
                "name": name,
                "legendgroup": f"path{k}",
                "line": {"color": color, "width": 5},
                "hoverinfo": "skip",
            }
        )

    styles = {  # border, text colour, symbol; nodes with mass are drawn alike
        EMPTY: ("#9aa0a6", "#6b7280", "circle"),
        PADDING: ("#9aa0a6", "#6b7280", "square"),
    }
    for group, rows in groups.items():
        border, text_color, symbol = styles.get(group, ("#2a3f5f", "#2a3f5f", "circle"))
        x, y, text, hover, size, fill, ids = (list(column) for column in zip(*rows, strict=True))
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": y,
                "mode": "markers+text",
                "name": group,
                "text": text,
                "textposition": "middle center",
                "textfont": {"size": BASE_FONT_SIZE - 2, "color": text_color},
                "hovertext": hover,
                "hoverinfo": "text",
                "customdata": ids,
                "marker": {
                    "size": size,
                    "color": fill,
                    "line": {"color": border, "width": 1.5},
                    "symbol": symbol,
                    # An array of sizes makes plotly.js default to a translucent "bubble" marker.
                    "opacity": 1.0,
                },
                "showlegend": group in (PADDING, EMPTY),
            }
        )

    for k, group in enumerate(path_groups):
        color = EMPHASIS if many else PATH_PALETTE[k]
        ids = sorted({j for path in group for j in path})
        points = [_node_xy(j, width) for j in ids]
        traces.append(
            {
                "type": "scatter",
                "x": [p[0] for p in points],
                "y": [p[1] for p in points],
                "mode": "markers",
                "name": f"path {k + 1} nodes",
                "legendgroup": f"path{k}",
                "customdata": ids,
                "marker": {
                    "size": [_node_size(1 << (j.bit_length() - 1)) + 8 for j in ids],
                    "color": color,
                    "symbol": "circle-open",
                    "line": {"width": 4},
                    "opacity": 1.0,
                },
                "hoverinfo": "skip",
                "showlegend": False,
            }
        )

    level_names = ["root"] + [f"level {d}" for d in range(1, depth_count)]
    if leaf_level:
        level_names[-1] = "leaves"
    yaxis = {
        "autorange": "reversed",
        "tickmode": "array",
        "tickvals": list(range(depth_count)),
        "ticktext": level_names,
        "showgrid": False,
        "zeroline": False,
    }
    leaf_ticks = leaf_level and width <= 32
    xaxis: dict[str, Any] = {
        "showgrid": False,
        "zeroline": False,
        "range": [-0.7, width - 0.3],
        "showticklabels": leaf_ticks,
        "tickmode": "array" if leaf_ticks else "auto",
    }
    if leaf_ticks:
        xaxis["tickvals"] = list(range(width))
    layout = _style(
        title=title,
        x_title="leaf (buffer slot)" if leaf_ticks else "",
        legend=bool(paths) or PADDING in groups or EMPTY in groups,
        height=max(300, 110 + 85 * depth_count),
        xaxis=xaxis,
        yaxis=yaxis,
    )
    return go.Figure(data=traces, layout=layout)


def _segments(
    steps: Iterable[tuple[int, int]], width: int
) -> tuple[list[float | None], list[float | None]]:
    """x and y of the lines from parent to child of each (parent, child) of `steps`, heap node
    ids in a tree of `width` leaves: one trace, the lines separated by None."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for parent, child in steps:
        (x0, y0), (x1, y1) = _node_xy(parent, width), _node_xy(child, width)
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    return xs, ys


def sum_tree_figure(
    leaf_masses: ArrayLike,
    *,
    paths: Sequence[Sequence[int]] | None = None,
    highlight_leaves: Sequence[int] | None = None,
    show_values: bool = True,
    title: str | None = None,
) -> go.Figure:
    """A small sum tree drawn node by node: root at the top, leaves at the bottom.

    Internal sums are computed here from `leaf_masses` (heap layout: node 1 the root, node j's
    children 2j and 2j+1, leaf i at node P + i with P the next power of two). Leaves past
    `len(leaf_masses)` are padding, drawn grey. Each node is labelled with its sum (3 significant
    digits) on levels of at most `MAX_LABELS_PER_LEVEL` nodes; hovering always shows it.

    `paths`: root-to-leaf node-id paths (`rdqn.classroom.tree_demo.descent_path`) drawn in strong
    colours, one per path from a qualitative palette, or all in one colour when there are more
    paths than palette colours. `highlight_leaves`: leaf indices filled in amber.
    Meant for 2..64 leaves; more than `MAX_TREE_LEAVES` raises (use `tree_levels_figure`).
    """
    masses = _as_1d(leaf_masses)
    default_title = "Sum tree"
    if masses.size == 0:
        return empty_figure(title or default_title)
    if masses.size > MAX_TREE_LEAVES:
        raise ValueError(
            f"sum_tree_figure draws at most {MAX_TREE_LEAVES} leaves, got {masses.size}; "
            "use tree_levels_figure for the top of a large tree"
        )
    nodes, leaves, n = leaf_heap(masses)
    checked = _check_paths(paths or [], 2 * leaves)
    highlighted = {int(i) for i in highlight_leaves or []}
    for i in highlighted:
        if not 0 <= i < n:
            raise ValueError(f"highlight_leaves must be in [0, {n}), got {i}")
    return _draw_tree(
        nodes,
        depth_count=leaves.bit_length(),
        leaf_level=True,
        slots_per_node=1,
        capacity=n,
        size=n,
        paths=checked,
        highlight_leaves=highlighted,
        show_values=show_values,
        title=title or f"{default_title}: total mass {_compact(float(nodes[1]))}",
    )


def tree_levels_figure(
    levels: Sequence[ArrayLike],
    *,
    capacity: int | None = None,
    size: int | None = None,
    show_values: bool = True,
    title: str = "Top of the live sum tree",
) -> go.Figure:
    """The top levels of a large sum tree (`SumTree.levels(depth)`): level k holds 2^k node sums.

    Drawn like `sum_tree_figure`. With the buffer's `capacity` (and `size`, the slots filled so
    far), nodes over padding slots (past the capacity: the tree's P = the next power of two
    leaves) and over slots not filled yet are drawn as such, with a legend entry each, instead
    of as unexplained zeros; without them, nodes whose subtree has no mass are drawn empty.
    """
    if not levels:
        return empty_figure(title)
    nodes = [np.zeros(1)]
    for k, level in enumerate(levels):
        values = _as_1d(level)
        if values.size != 1 << k:
            raise ValueError(f"level {k} must hold {1 << k} nodes, got {values.size}")
        nodes.append(values)
    depth_count = len(levels)
    bottom = 1 << (depth_count - 1)
    slots_per_node = 1
    if capacity is not None:
        leaves = tree_leaf_count(capacity)
        if leaves < bottom:
            raise ValueError(
                f"a tree of capacity {capacity} has {leaves} leaves, fewer than the {bottom} "
                f"nodes of level {depth_count - 1}"
            )
        slots_per_node = leaves // bottom
    return _draw_tree(
        np.concatenate(nodes),
        depth_count=depth_count,
        leaf_level=capacity is not None and slots_per_node == 1,
        slots_per_node=slots_per_node,
        capacity=capacity,
        size=size,
        paths=[],
        highlight_leaves=set(),
        show_values=show_values,
        title=title,
    )
