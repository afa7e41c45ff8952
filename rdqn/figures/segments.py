"""Sampling pictures: a stratified batch drawn from the mass bar, and repeated draws against
their target P(i)."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from rdqn.figures._base import (
    BASE_FONT_SIZE,
    EMPHASIS,
    MAX_LABELLED_QUERIES,
    MAX_LABELLED_SEGMENTS,
    MAX_LABELLED_STRATA,
    MIN_LABELLED_SHARE,
    NEUTRAL,
    SEGMENT_FILLS,
    _as_1d,
    _compact,
    _rgba,
    _same_length,
    _style,
    empty_figure,
)
from rdqn.figures.tree import leaf_heap


def segments_figure(
    leaf_masses: ArrayLike,
    queries: ArrayLike | None,
    batch_size: int,
    *,
    title: str | None = None,
) -> go.Figure:
    """Drawing a stratified batch: the total mass as one bar split into leaves.

    Each leaf is a segment as wide as its mass (alternating light fills, labelled with the leaf
    index when there are few). Dashed lines at k * total / B, k = 0..B, cut the total into the B
    equal strata; one query mass is drawn uniformly in each. Each query is a marker labelled with
    the leaf that owns it (found by `rdqn.replay.SumTree.find`).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    masses = _as_1d(leaf_masses)
    default_title = f"Drawing a batch of {batch_size}"
    if masses.size == 0 or not masses.sum() > 0:
        return empty_figure(title or default_title)
    nodes, leaves, n = leaf_heap(masses)
    total = float(nodes[1])
    starts = np.concatenate([[0.0], np.cumsum(masses)[:-1]])
    fills = [SEGMENT_FILLS[i % 2] for i in range(n)]
    labelled = n <= MAX_LABELLED_SEGMENTS
    bars = {
        "type": "bar",
        "x": masses,
        "base": starts,
        "y": np.zeros(n),
        "orientation": "h",
        "width": 0.5,
        "name": "leaves",
        "marker": {"color": fills, "line": {"color": "#ffffff", "width": 1}},
        # A label in a segment too narrow to hold it would be shrunk to a speck: leave it out.
        "text": [
            str(i) if labelled and m >= MIN_LABELLED_SHARE * total else ""
            for i, m in enumerate(masses)
        ],
        "textposition": "inside",
        "insidetextanchor": "middle",
        "textfont": {"size": BASE_FONT_SIZE - 1, "color": "#333"},
        "customdata": np.column_stack([np.arange(n), starts, starts + masses]),
        "hovertemplate": "leaf %{customdata[0]:.0f}<br>mass %{x:.4g}<br>"
        "covers [%{customdata[1]:.4g}, %{customdata[2]:.4g})<extra></extra>",
    }
    traces: list[dict[str, Any]] = [bars]
    segment = total / batch_size
    shapes = [
        {
            "type": "line",
            "x0": k * segment,
            "x1": k * segment,
            "y0": -0.45,
            "y1": 0.45,
            "line": {"dash": "dash", "color": "#444", "width": 1.5},
            # Under the bars: the stubs above and below mark the cut, and no leaf's label is
            # crossed out by a line through it.
            "layer": "below",
            "name": f"stratum boundary {k}",
        }
        for k in range(batch_size + 1)
    ]
    labels = [
        {
            "x": (k + 0.5) * segment,
            "y": -0.42,
            "text": f"stratum {k + 1}",
            "showarrow": False,
            "yanchor": "top",
            "font": {"size": BASE_FONT_SIZE - 3, "color": "#666"},
        }
        for k in range(batch_size)
        if batch_size <= MAX_LABELLED_STRATA
    ]
    q = _as_1d(queries) if queries is not None else np.zeros(0)
    if q.size:
        from rdqn.replay import SumTree  # compiled: loads when a tree is drawn

        tree = SumTree(leaves, track_min=False)
        tree.update(np.arange(leaves), nodes[leaves:])
        hit = tree.find(q)
        text = [f"→ {h}" for h in hit] if q.size <= MAX_LABELLED_QUERIES else None
        traces.append(
            {
                "type": "scatter",
                "x": q,
                "y": np.full(q.size, 0.33),
                "mode": "markers+text" if text else "markers",
                "name": "queries",
                "text": text,
                "textposition": "top center",
                "textfont": {"size": BASE_FONT_SIZE - 1, "color": EMPHASIS},
                "customdata": hit,
                "marker": {"symbol": "triangle-down", "size": 14, "color": EMPHASIS},
                "hovertemplate": "query mass %{x:.4g}<br>hits leaf %{customdata}<extra></extra>",
            }
        )
    xaxis: dict[str, Any] = {
        "range": [-0.01 * total, 1.01 * total],
        "showgrid": False,
        "zeroline": False,
    }
    if batch_size <= MAX_LABELLED_STRATA:
        # The mass axis is ticked at the strata's edges, k·total/B: plain 0, 1, 2, ... ticks
        # read like the leaf numbers drawn on the bars above them.
        edges = [k * segment for k in range(batch_size + 1)]
        xaxis.update(tickmode="array", tickvals=edges, ticktext=[_compact(e) for e in edges])
    layout = _style(
        title=title
        or f"{default_title}: total mass {_compact(total)}, stratum {_compact(segment)}",
        x_title="cumulative mass (priority^α)",
        height=300,
        xaxis=xaxis,
        yaxis={"visible": False, "range": [-0.75, 0.75], "fixedrange": True},
        shapes=shapes,
        annotations=labels,
    )
    return go.Figure(data=traces, layout=layout)


def draw_histogram_figure(
    counts: ArrayLike,
    probabilities: ArrayLike,
    *,
    batch_size: int | None = None,
    title: str | None = None,
) -> go.Figure:
    """Repeated draws: each leaf's empirical frequency (bars) against its target P(i) (markers).

    `probabilities` may be unnormalised (masses): the target is p_i / sum_k p_k. As draws
    accumulate the bars converge on the markers; the title shows the number of draws (one per
    sampled leaf; with `batch_size`, also in batches) and the total variation distance
    1/2 sum_i |f_i - P(i)|.
    """
    c, p = _same_length(counts=counts, probabilities=probabilities)
    if p.size == 0 or not p.sum() > 0:
        return empty_figure(title or "Repeated draws")
    target = p / p.sum()
    draws = float(c.sum())
    frequency = c / draws if draws > 0 else np.zeros_like(c)
    leaves = np.arange(p.size)
    heading = f"{draws:,.0f} leaves drawn"
    if batch_size and draws > 0:
        heading += f" ({draws / batch_size:,.0f} batches of {batch_size})"
    if draws > 0:
        distance = 0.5 * float(np.abs(frequency - target).sum())
        heading += f": total variation distance to P(i) {distance:.3f}"
    observed = {
        "type": "bar",
        "x": leaves,
        "y": frequency,
        "name": "observed frequency",
        "marker": {"color": _rgba(NEUTRAL, 0.55)},
        "customdata": c,
        "hovertemplate": "leaf %{x}<br>frequency %{y:.3f} (%{customdata:,.0f} draws)"
        "<extra></extra>",
    }
    expected = {
        "type": "scatter",
        "x": leaves,
        "y": target,
        "mode": "markers",
        "name": "target P(i)",
        "marker": {"symbol": "line-ew-open", "size": 30, "line": {"width": 3, "color": EMPHASIS}},
        "hovertemplate": "leaf %{x}<br>P(i) %{y:.3f}<extra></extra>",
    }
    xaxis: dict[str, Any] = {"range": [-0.6, p.size - 0.4]}
    if p.size <= MAX_LABELLED_SEGMENTS:
        xaxis.update(tickmode="array", tickvals=leaves.tolist())
    top = max(float(frequency.max()), float(target.max()))
    layout = _style(
        title=title or heading,
        x_title="leaf",
        y_title="fraction of draws",
        legend=True,
        xaxis=xaxis,
        yaxis={"range": [0.0, 1.1 * top]},  # room above the tallest bar or marker
    )
    return go.Figure(data=[observed, expected], layout=layout)
