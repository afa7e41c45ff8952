"""Figure builders for the dashboard: plain data in, `plotly.graph_objects.Figure` out.

Every builder is a pure function of numpy arrays or the frozen `rdqn` dataclasses, so the pages
stay thin and the figures are unit-tested without Streamlit. The figures are meant for a
projector: a 15 px base font, axis titles with units, one color per replay scheme
(`rdqn.compare.SCHEME_COLORS`), compact margins, and an empty-state figure ("no data yet") instead
of an exception when there is nothing to plot yet. No template is set: `st.plotly_chart` applies
the app's theme, and assigning a template deep-copies it, which made building a figure cost
~130 ms of the training thread's GIL time.

Names follow the core: *priority* |delta| + eps, *mass* priority^alpha (what a sum tree stores),
P(i) = m_i / sum_k m_k, *weight* the importance-sampling weight w_i = (N * P(i))^-beta / max w
(Schaul et al. 2015, arXiv:1511.05952).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike, NDArray
from plotly.colors import qualitative, sample_colorscale

from rdqn.compare import SCHEME_COLORS, Curve, report_figure
from rdqn.replay import SumTree
from rdqn.telemetry import BatchView, GoodnessOfFit, Histogram, HistogramHistory

__all__ = [
    "EMPTY_MESSAGE",
    "age_figure",
    "column_fractions",
    "comparison_figure",
    "draw_histogram_figure",
    "ema",
    "empty_figure",
    "fit_figure",
    "heatmap_over_time",
    "histogram_figure",
    "loss_curve",
    "reward_curve",
    "runs_overlay_figure",
    "segments_figure",
    "sum_tree_figure",
    "td_stages_figure",
    "timing_figure",
    "tree_levels_figure",
    "weights_scatter",
]

EMPTY_MESSAGE = "no data yet"
BASE_FONT_SIZE = 15
NEUTRAL = "#5b6b8c"
"""Color for data that belongs to no replay scheme (timings, unknown schemes)."""
FAINT = "#9aa0a6"
EMPHASIS = "#d62728"
"""Highlighted paths when there are too many to give each its own color."""
HIGHLIGHT_FILL = "#ffd166"
SEGMENT_FILLS = ("#c6dbef", "#fdd0a2")
"""Alternating light fills for adjacent leaves in the mass bar."""
PATH_PALETTE = tuple(qualitative.Dark2)
MAX_TREE_LEAVES = 256
"""Beyond this a node-by-node drawing is unreadable: use `tree_levels_figure`."""
MAX_LABELS_PER_LEVEL = 16
"""Node labels are drawn on a tree level only when it has at most this many nodes."""
MAX_LABELLED_QUERIES = 16
MAX_LABELLED_SEGMENTS = 32
MAX_LABELLED_STRATA = 16
MIN_LABELLED_SHARE = 0.025
"""A leaf segment gets its index written in it only when it holds this share of the total."""

_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_MARGIN = {"l": 64, "r": 24, "t": 84, "b": 56}


# --------------------------------------------------------------------------- shared helpers


def ema(values: ArrayLike, smoothing: float) -> NDArray[np.float64]:
    """TensorBoard's debiased exponential moving average.

    s_t = smoothing * s_{t-1} + (1 - smoothing) * v_t with s_0 = 0, reported as
    s_t / (1 - smoothing^n_t) where n_t counts the finite values so far; the division removes
    the pull towards 0 of the zero start. `smoothing = 0` returns the values unchanged.
    A non-finite value is passed through and leaves the average untouched.

    [1, 2, 3] with smoothing 0.5 gives [1, 5/3, 17/7].
    """
    if not 0.0 <= smoothing < 1.0:
        raise ValueError(f"smoothing must be in [0, 1), got {smoothing}")
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    out = np.empty_like(v)
    last = 0.0
    count = 0
    for i, value in enumerate(v):
        if not math.isfinite(value):
            out[i] = value
            continue
        last = last * smoothing + (1.0 - smoothing) * value
        count += 1
        out[i] = last / (1.0 - smoothing**count)
    return out


def empty_figure(title: str = "", message: str = EMPTY_MESSAGE) -> go.Figure:
    """A styled figure with no axes and a centred `message`: the state before data arrives."""
    fig = go.Figure()
    fig.add_annotation(
        text=message,
        x=0.5,
        y=0.5,
        xref="paper",
        yref="paper",
        showarrow=False,
        font={"size": BASE_FONT_SIZE + 5, "color": FAINT},
    )
    _style(fig, title=title)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def _style(
    fig: go.Figure,
    *,
    title: str,
    x_title: str | None = None,
    y_title: str | None = None,
    legend: bool = False,
    height: int | None = None,
) -> go.Figure:
    """The look shared by every figure: fonts, compact margins, legend above the plot."""
    fig.update_layout(
        font={"size": BASE_FONT_SIZE},
        title={"text": title, "x": 0.01, "xanchor": "left", "font": {"size": BASE_FONT_SIZE + 4}},
        margin=_MARGIN,
        showlegend=legend,
        legend={
            "orientation": "h",
            "x": 1.0,
            "xanchor": "right",
            "y": 1.02,
            "yanchor": "bottom",
            "bgcolor": "rgba(255,255,255,0)",
        },
        hoverlabel={"font": {"size": BASE_FONT_SIZE}},
    )
    if x_title is not None:
        fig.update_xaxes(title_text=x_title)
    if y_title is not None:
        fig.update_yaxes(title_text=y_title)
    if height is not None:
        fig.update_layout(height=height)
    return fig


def _scheme_color(scheme: str | None) -> str:
    return SCHEME_COLORS.get(scheme, NEUTRAL) if scheme is not None else NEUTRAL


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _compact(value: float) -> str:
    """Three significant digits, with k/M suffixes so large sums stay short: 12345 -> '12.3k'."""
    if not math.isfinite(value):
        return str(value)
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:.3g}M"
    if magnitude >= 1e3:
        return f"{value / 1e3:.3g}k"
    return f"{value:.3g}"


def _power_of_ten_label(k: int) -> str:
    """10^k written out while short: -2 -> '0.01', 3 -> '1000', -6 -> '10⁻⁶'."""
    if k < -3 or k > 4:
        return "10" + str(k).translate(_SUPERSCRIPTS)
    return f"{10.0**k:.{-k}f}" if k < 0 else f"{10**k:d}"


def _log_ticks(low: float, high: float) -> tuple[list[int], list[str]]:
    """Integer exponents in [low, high] and their 10^k labels, for axes holding log10 values."""
    exponents = list(range(math.ceil(low), math.floor(high) + 1))
    return exponents, [_power_of_ten_label(k) for k in exponents]


def _log_axis(values: NDArray[np.float64]) -> dict[str, Any]:
    """Axis settings for a log axis over `values`: one labelled tick per decade when they span
    at least one (plotly's default labels every digit in small type), else plotly's choice."""
    positive = values[np.isfinite(values) & (values > 0)]
    settings: dict[str, Any] = {"type": "log"}
    if positive.size and np.log10(positive.max() / positive.min()) >= 1.0:
        low, high = np.log10(positive.min()), np.log10(positive.max())
        exponents, labels = _log_ticks(math.floor(low), math.ceil(high))
        settings.update(tickmode="array", tickvals=[10.0**k for k in exponents], ticktext=labels)
    return settings


def _as_1d(values: ArrayLike) -> NDArray[np.float64]:
    return np.asarray(values, dtype=np.float64).reshape(-1)


def _same_length(**arrays: NDArray[Any]) -> None:
    sizes = {name: a.shape[0] for name, a in arrays.items()}
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{name}={size}" for name, size in sizes.items())
        raise ValueError(f"arrays must have the same length, got {listed}")


# --------------------------------------------------------------------------- learning curves


def reward_curve(
    end_steps: ArrayLike,
    returns: ArrayLike,
    *,
    smoothing: float = 0.9,
    overlay: tuple[ArrayLike, ArrayLike] | None = None,
    overlay_label: str = "previous run",
    threshold: float | None = None,
    scheme: str | None = None,
    title: str = "Episode return",
) -> go.Figure:
    """Episode returns against environment steps: raw (faint) and EMA-smoothed (`ema`).

    `overlay` = (end_steps, returns) of a previous run, drawn as its smoothed curve in dashed grey,
    so that the effect of changing alpha or beta stays visible after the restart. `threshold`
    adds a dotted horizontal line (e.g. 475 for CartPole-v1). `scheme` picks the line color.
    """
    steps = _as_1d(end_steps)
    values = _as_1d(returns)
    _same_length(end_steps=steps, returns=values)
    overlay_steps = overlay_values = None
    if overlay is not None:
        overlay_steps = _as_1d(overlay[0])
        overlay_values = _as_1d(overlay[1])
        _same_length(overlay_end_steps=overlay_steps, overlay_returns=overlay_values)
    has_overlay = overlay_values is not None and overlay_values.size > 0
    if values.size == 0 and not has_overlay:
        return empty_figure(title)

    color = _scheme_color(scheme)
    fig = go.Figure()
    if has_overlay:
        fig.add_scatter(
            x=overlay_steps,
            y=ema(overlay_values, smoothing),
            mode="lines",
            name=overlay_label,
            line={"color": FAINT, "width": 2.5, "dash": "dash"},
            hovertemplate=f"{overlay_label}<br>step %{{x:,}}<br>smoothed %{{y:.1f}}<extra></extra>",
        )
    if values.size:
        fig.add_scatter(
            x=steps,
            y=values,
            mode="lines+markers",
            name="return",
            line={"color": _rgba(color, 0.3), "width": 1},
            marker={"color": _rgba(color, 0.35), "size": 5},
            hovertemplate="step %{x:,}<br>return %{y:.1f}<extra></extra>",
        )
        fig.add_scatter(
            x=steps,
            y=ema(values, smoothing),
            mode="lines",
            name=f"smoothed (EMA {smoothing:g})",
            line={"color": color, "width": 3},
            hovertemplate="step %{x:,}<br>smoothed %{y:.1f}<extra></extra>",
        )
    if threshold is not None:
        _threshold_line(fig, threshold)
    return _style(
        fig, title=title, x_title="environment steps", y_title="episode return", legend=True
    )


def _threshold_line(fig: go.Figure, threshold: float) -> None:
    fig.add_hline(
        y=threshold,
        line={"dash": "dot", "color": "#444", "width": 2},
        annotation_text=f"threshold {threshold:g}",
        annotation_position="bottom right",
        annotation_font={"size": BASE_FONT_SIZE - 2, "color": "#444"},
    )


def loss_curve(
    updates: ArrayLike,
    losses: ArrayLike,
    td_abs_mean: ArrayLike | None = None,
    *,
    log_y: bool = False,
    scheme: str | None = None,
    title: str = "Training loss",
) -> go.Figure:
    """Loss per learner update, with the batch-mean |TD error| on a second y axis if given.

    `log_y` puts both y axes on a log scale (losses span orders of magnitude early on).
    """
    x = _as_1d(updates)
    y = _as_1d(losses)
    _same_length(updates=x, losses=y)
    if x.size == 0:
        return empty_figure(title)
    fig = go.Figure()
    fig.add_scatter(
        x=x,
        y=y,
        mode="lines",
        name="loss",
        line={"color": _scheme_color(scheme), "width": 2},
        hovertemplate="update %{x:,}<br>loss %{y:.4g}<extra></extra>",
    )
    two_lines = td_abs_mean is not None
    if td_abs_mean is not None:
        td = _as_1d(td_abs_mean)
        _same_length(updates=x, td_abs_mean=td)
        fig.add_scatter(
            x=x,
            y=td,
            mode="lines",
            name="mean |TD error|",
            yaxis="y2",
            line={"color": "#444", "width": 1.5, "dash": "dot"},
            hovertemplate="update %{x:,}<br>mean |TD error| %{y:.4g}<extra></extra>",
        )
        fig.update_layout(
            yaxis2={
                "title": {"text": "mean |TD error|"},
                "overlaying": "y",
                "side": "right",
                "showgrid": False,
                **(_log_axis(td) if log_y else {}),
            },
            margin={**_MARGIN, "r": 72},
        )
    fig.update_layout(yaxis={"title": {"text": "loss (batch mean)"}})
    if log_y:
        fig.update_layout(yaxis=_log_axis(y))
    return _style(fig, title=title, x_title="learner updates", legend=two_lines)


# --------------------------------------------------------------------------- distributions


def _is_empty(hist: Histogram | None) -> bool:
    return hist is None or hist.counts.size == 0 or not np.any(hist.counts)


def histogram_figure(
    hist: Histogram | None,
    *,
    title: str,
    x_title: str,
    y_title: str = "count",
    color: str | None = None,
    log_x_labels: bool = False,
    reference: float | None = None,
    reference_label: str = "",
) -> go.Figure:
    """Bars at the bin centres of `hist`, each as wide as its bin.

    With `log_x_labels` the x values are log10 of the quantity and the ticks read as 10^k
    ("0.01", "0.1", "1", "10", ...): used for N * P(i), where 1 is what uniform replay gives.
    `reference` draws a dotted vertical line at that x (in the axis' own units, so 0 for N*P = 1).
    """
    if _is_empty(hist):
        return empty_figure(title)
    assert hist is not None
    centers = hist.centers
    widths = np.diff(hist.edges)
    fig = go.Figure()
    if log_x_labels:
        customdata = [_compact(10.0**c) for c in centers]
        hover = f"{x_title}<br>≈ %{{customdata}}<br>{y_title} %{{y:,.0f}}<extra></extra>"
    else:
        customdata = None
        hover = f"{x_title}<br>%{{x:.3g}}<br>{y_title} %{{y:,.0f}}<extra></extra>"
    fig.add_bar(
        x=centers,
        y=hist.counts,
        width=widths * 0.92,
        marker={"color": color or NEUTRAL},
        customdata=customdata,
        hovertemplate=hover,
        name=y_title,
    )
    if log_x_labels:
        tickvals, ticktext = _log_ticks(float(hist.edges[0]), float(hist.edges[-1]))
        fig.update_xaxes(tickmode="array", tickvals=tickvals, ticktext=ticktext)
    if reference is not None:
        fig.add_vline(
            x=reference,
            line={"dash": "dot", "color": "#444", "width": 2},
            annotation_text=reference_label,
            annotation_position="top right",
            annotation_font={"size": BASE_FONT_SIZE - 2, "color": "#444"},
        )
    fig.update_layout(bargap=0)
    return _style(fig, title=title, x_title=x_title, y_title=y_title)


def column_fractions(counts: ArrayLike) -> NDArray[np.float64]:
    """Rows of `counts` (one histogram per time step) as fractions; all-zero rows become NaN."""
    c = np.asarray(counts, dtype=np.float64)
    totals = c.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, c / np.where(totals > 0, totals, 1.0), np.nan)


def heatmap_over_time(
    history: HistogramHistory,
    *,
    title: str,
    y_title: str,
    log_y_labels: bool = False,
    x_title: str = "learner updates",
) -> go.Figure:
    """A distribution over time, like TensorBoard's histogram view.

    x = the update at which each histogram was recorded, y = bin centres, colour = the fraction
    of that column's count in the bin (each column sums to 1; a column with no counts is blank).
    With `log_y_labels` the bins are log10 values and ticks read as 10^k.
    """
    if history.steps.size == 0 or history.counts.size == 0:
        return empty_figure(title)
    centers = 0.5 * (history.edges[1:] + history.edges[:-1])
    z = column_fractions(history.counts).T
    fig = go.Figure()
    fig.add_heatmap(
        x=history.steps,
        y=centers,
        z=z,
        zmin=0.0,
        colorscale="Viridis",
        colorbar={"title": {"text": "fraction"}, "tickformat": ".0%", "thickness": 14},
        hovertemplate=f"update %{{x:,}}<br>{y_title} %{{y:.3g}}<br>"
        "fraction %{z:.1%}<extra></extra>",
    )
    if log_y_labels:
        tickvals, ticktext = _log_ticks(float(history.edges[0]), float(history.edges[-1]))
        fig.update_yaxes(tickmode="array", tickvals=tickvals, ticktext=ticktext)
    return _style(fig, title=title, x_title=x_title, y_title=y_title)


def td_stages_figure(
    stages: Mapping[str, Histogram], *, title: str = "|TD error| as training goes on"
) -> go.Figure:
    """One line per training stage ("10%", "25%", ...) of the recent |TD error| distribution.

    Counts are normalised to fractions so that stages with different numbers of samples compare;
    colours run from light (early) to dark (late) in the order the stages are given.
    """
    shown = {name: h for name, h in stages.items() if not _is_empty(h)}
    if not shown:
        return empty_figure(title)
    positions = np.linspace(0.35, 1.0, len(shown)) if len(shown) > 1 else [1.0]
    colors = sample_colorscale("Blues", list(positions))
    fig = go.Figure()
    for (name, hist), color in zip(shown.items(), colors, strict=True):
        fig.add_scatter(
            x=hist.centers,
            y=hist.counts / hist.counts.sum(),
            mode="lines",
            name=f"{name} of training",
            line={"color": color, "width": 3},
            hovertemplate=f"{name}<br>|TD| %{{x:.3g}}<br>fraction %{{y:.1%}}<extra></extra>",
        )
    fig.update_yaxes(tickformat=".0%")
    return _style(
        fig,
        title=title,
        x_title="|TD error|",
        y_title="fraction of recent samples",
        legend=True,
    )


def fit_figure(fit: GoodnessOfFit | None, *, title: str = "Sampler check") -> go.Figure:
    """Observed draws per slot bin (bars) against the counts P(i) predicts (markers).

    The title carries Pearson's chi-square, its degrees of freedom and the p-value: a tiny p-value
    says the sampler does not draw in proportion to the priorities.
    """
    if fit is None or fit.observed.size == 0:
        return empty_figure(title)
    edges = np.asarray(fit.bin_edges, dtype=np.float64)
    centers = 0.5 * (edges[1:] + edges[:-1])
    ranges = [f"{int(a)}–{int(b) - 1}" for a, b in zip(edges[:-1], edges[1:], strict=True)]
    p_text = "p < 0.001" if fit.p_value < 1e-3 else f"p = {fit.p_value:.3f}"
    full_title = f"{title}: χ² = {fit.chi_square:.1f}, dof = {fit.dof}, {p_text}"
    fig = go.Figure()
    fig.add_bar(
        x=centers,
        y=fit.observed,
        width=np.diff(edges) * 0.9,
        name="observed",
        marker={"color": _rgba(NEUTRAL, 0.55)},
        customdata=ranges,
        hovertemplate="slots %{customdata}<br>observed %{y:,.0f}<extra></extra>",
    )
    fig.add_scatter(
        x=centers,
        y=fit.expected,
        mode="lines+markers",
        name="expected from P(i)",
        line={"color": "#222", "width": 2},
        marker={"size": 8, "symbol": "diamond"},
        customdata=ranges,
        hovertemplate="slots %{customdata}<br>expected %{y:,.1f}<extra></extra>",
    )
    fig.update_layout(bargap=0)
    return _style(fig, title=full_title, x_title="buffer slot", y_title="draws", legend=True)


def age_figure(
    hist: Histogram | None, *, title: str = "Which memories get replayed", color: str | None = None
) -> go.Figure:
    """Sampled transitions by age as a fraction of the buffer (0 = newest, 1 = oldest).

    The dotted line is what uniform replay would give: the same count in every age bin.
    """
    if _is_empty(hist):
        return empty_figure(title)
    assert hist is not None
    fig = histogram_figure(
        hist,
        title=title,
        x_title="age (0 = newest, 1 = oldest)",
        y_title="samples",
        color=color,
    )
    fig.add_hline(
        y=float(hist.counts.mean()),
        line={"dash": "dot", "color": "#444", "width": 2},
        annotation_text="uniform replay",
        annotation_position="top right",
        annotation_font={"size": BASE_FONT_SIZE - 2, "color": "#444"},
    )
    fig.update_xaxes(range=[float(hist.edges[0]), float(hist.edges[-1])])
    return fig


def weights_scatter(
    batch: BatchView | None, *, title: str = "Last batch: rare items get large weights"
) -> go.Figure:
    """One point per sampled item: P(i) (log x) against its IS weight, sized and coloured by |TD|.

    Items the sampler rarely picks (small P(i)) carry the largest weights, w_i ∝ (N P(i))^-beta.
    The title adds the batch's effective sample size.
    """
    if batch is None or batch.probabilities.size == 0:
        return empty_figure(title)
    td = np.asarray(batch.td_abs, dtype=np.float64)
    top = float(td.max()) if td.size else 0.0
    sizes = 8.0 + 22.0 * td / top if top > 0 else np.full(td.shape, 12.0)
    customdata = np.column_stack([batch.indices, batch.ages, td])
    fig = go.Figure()
    fig.add_scatter(
        x=batch.probabilities,
        y=batch.weights,
        mode="markers",
        name="sampled items",
        customdata=customdata,
        marker={
            "size": sizes,
            "color": td,
            "colorscale": "Viridis",
            "showscale": True,
            "colorbar": {"title": {"text": "|TD error|"}, "thickness": 14},
            "line": {"width": 0.5, "color": "#333"},
            "opacity": 0.85,
        },
        hovertemplate="slot %{customdata[0]:.0f} (age %{customdata[1]:.0f})<br>"
        "P(i) %{x:.3g}<br>weight %{y:.3f}<br>|TD| %{customdata[2]:.3g}<extra></extra>",
    )
    fig.update_xaxes(**_log_axis(np.asarray(batch.probabilities, dtype=np.float64)))
    full_title = f"{title} (ESS {batch.ess:.1f} of {batch.probabilities.size})"
    return _style(
        fig,
        title=full_title,
        x_title="sampling probability P(i), log scale",
        y_title="IS weight w_i",
    )


# --------------------------------------------------------------------------- sum tree


def _heap(leaf_masses: ArrayLike) -> tuple[NDArray[np.float64], int, int]:
    """(nodes, P, n): the leaves loaded into a real `rdqn.replay.SumTree` (heap layout: node 1 the
    root, leaf i at node P + i), so the drawing shows exactly what the library computes."""
    masses = _as_1d(leaf_masses)
    n = masses.size
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


def _draw_tree(
    nodes: NDArray[np.float64],
    *,
    depth_count: int,
    real_leaves: int | None,
    paths: list[list[int]],
    highlight_leaves: set[int],
    show_values: bool,
    title: str,
) -> go.Figure:
    """Draw heap `nodes[1 : 2**depth_count]`; `real_leaves` = n when the bottom level is leaves.

    Nodes covering only padding leaves (or, for a partial tree, empty subtrees) are grey.
    """
    width = 1 << (depth_count - 1)
    node_count = 2 * width
    total = float(nodes[1])
    groups: dict[str, dict[str, list[Any]]] = {}

    def add(group: str, j: int, text: str, hover: str, fill: str) -> None:
        x, y = _node_xy(j, width)
        g = groups.setdefault(
            group, {"x": [], "y": [], "text": [], "hover": [], "size": [], "fill": [], "id": []}
        )
        level_width = 1 << (j.bit_length() - 1)
        g["x"].append(x)
        g["y"].append(y)
        g["text"].append(text if show_values and level_width <= MAX_LABELS_PER_LEVEL else "")
        g["hover"].append(hover)
        g["size"].append(_node_size(level_width))
        g["fill"].append(fill)
        g["id"].append(j)

    for j in range(1, node_count):
        depth = j.bit_length() - 1
        value = float(nodes[j])
        share = f"{value / total:.1%} of total" if total > 0 else "total is 0"
        is_leaf_level = depth == depth_count - 1 and real_leaves is not None
        first_leaf = (j - (1 << depth)) * (width >> depth)
        if real_leaves is not None and first_leaf >= real_leaves:
            what = "padding leaf" if is_leaf_level else f"node {j}"
            add("padding", j, "", f"{what}: beyond capacity, never sampled", "#f2f2f2")
        elif is_leaf_level:
            leaf = j - width
            fill = HIGHLIGHT_FILL if leaf in highlight_leaves else "#ffffff"
            hover = f"leaf {leaf} (node {j})<br>mass {value:.4g}<br>P = {share}"
            add("leaves", j, _compact(value), hover, fill)
        elif real_leaves is None and value <= 0.0:
            add(
                "empty nodes",
                j,
                _compact(value),
                f"node {j}<br>sum 0: nothing to sample",
                "#f2f2f2",
            )
        else:
            hover = f"node {j}<br>sum {value:.4g}<br>{share}"
            add(
                "internal nodes" if real_leaves is not None else "nodes",
                j,
                _compact(value),
                hover,
                "#e8ecf7",
            )

    fig = go.Figure()
    edge_x: list[float | None] = []
    edge_y: list[float | None] = []
    for j in range(2, node_count):
        (x0, y0), (x1, y1) = _node_xy(j >> 1, width), _node_xy(j, width)
        edge_x += [x0, x1, None]
        edge_y += [y0, y1, None]
    fig.add_scatter(
        x=edge_x,
        y=edge_y,
        mode="lines",
        name="edges",
        line={"color": "#c4c9d4", "width": 1.5},
        hoverinfo="skip",
        showlegend=False,
    )

    many = len(paths) > len(PATH_PALETTE)
    path_groups = [paths] if many else [[p] for p in paths]
    for k, group in enumerate(path_groups):
        color = EMPHASIS if many else PATH_PALETTE[k]
        xs: list[float | None] = []
        ys: list[float | None] = []
        for path in group:
            for parent, child in zip(path[:-1], path[1:], strict=False):
                (x0, y0), (x1, y1) = _node_xy(parent, width), _node_xy(child, width)
                xs += [x0, x1, None]
                ys += [y0, y1, None]
        if many:
            name = f"{len(paths)} paths"
        else:
            end = group[0][-1]
            name = f"path to leaf {end - width}" if end >= width else f"path to node {end}"
        fig.add_scatter(
            x=xs,
            y=ys,
            mode="lines",
            name=name,
            legendgroup=f"path{k}",
            line={"color": color, "width": 5},
            hoverinfo="skip",
        )

    styles = {
        "internal nodes": ("#2a3f5f", "#2a3f5f"),
        "nodes": ("#2a3f5f", "#2a3f5f"),
        "leaves": ("#2a3f5f", "#2a3f5f"),
        "empty nodes": ("#bbbbbb", "#999999"),
        "padding": ("#bbbbbb", "#999999"),
    }
    for group, g in groups.items():
        border, text_color = styles[group]
        fig.add_scatter(
            x=g["x"],
            y=g["y"],
            mode="markers+text",
            name=group,
            text=g["text"],
            textposition="middle center",
            textfont={"size": BASE_FONT_SIZE - 2, "color": text_color},
            hovertext=g["hover"],
            hoverinfo="text",
            customdata=g["id"],
            marker={
                "size": g["size"],
                "color": g["fill"],
                "line": {"color": border, "width": 1.5},
                "symbol": "circle",
                # An array of sizes makes plotly.js default to a translucent "bubble" marker.
                "opacity": 1.0,
            },
            showlegend=False,
        )

    for k, group in enumerate(path_groups):
        color = EMPHASIS if many else PATH_PALETTE[k]
        ids = sorted({j for path in group for j in path})
        points = [_node_xy(j, width) for j in ids]
        fig.add_scatter(
            x=[p[0] for p in points],
            y=[p[1] for p in points],
            mode="markers",
            name=f"path {k + 1} nodes",
            legendgroup=f"path{k}",
            customdata=ids,
            marker={
                "size": [_node_size(1 << (j.bit_length() - 1)) + 8 for j in ids],
                "color": color,
                "symbol": "circle-open",
                "line": {"width": 4},
                "opacity": 1.0,
            },
            hoverinfo="skip",
            showlegend=False,
        )

    level_names = ["root"] + [f"level {d}" for d in range(1, depth_count)]
    if real_leaves is not None:
        level_names[-1] = "leaves"
    fig.update_yaxes(
        autorange="reversed",
        tickmode="array",
        tickvals=list(range(depth_count)),
        ticktext=level_names,
        showgrid=False,
        zeroline=False,
    )
    leaf_ticks = real_leaves is not None and width <= 32
    fig.update_xaxes(
        showgrid=False,
        zeroline=False,
        range=[-0.7, width - 0.3],
        showticklabels=leaf_ticks,
        tickmode="array" if leaf_ticks else "auto",
        tickvals=list(range(width)) if leaf_ticks else None,
    )
    _style(
        fig,
        title=title,
        x_title="leaf (buffer slot)" if leaf_ticks else "",
        legend=bool(paths),
        height=max(300, 110 + 85 * depth_count),
    )
    return fig


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

    `paths`: root-to-leaf node-id paths (`rdqn.worked_example.descent_path`) drawn in strong
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
    nodes, leaves, n = _heap(masses)
    checked = _check_paths(paths or [], 2 * leaves)
    highlighted = {int(i) for i in highlight_leaves or []}
    for i in highlighted:
        if not 0 <= i < n:
            raise ValueError(f"highlight_leaves must be in [0, {n}), got {i}")
    return _draw_tree(
        nodes,
        depth_count=leaves.bit_length(),
        real_leaves=n,
        paths=checked,
        highlight_leaves=highlighted,
        show_values=show_values,
        title=title or f"{default_title}: total mass {_compact(float(nodes[1]))}",
    )


def tree_levels_figure(
    levels: Sequence[ArrayLike],
    *,
    show_values: bool = True,
    title: str = "Top of the live sum tree",
) -> go.Figure:
    """The top levels of a large sum tree (`SumTree.levels(depth)`): level k holds 2^k node sums.

    Drawn like `sum_tree_figure` without leaves; nodes whose subtree has no mass are grey.
    """
    if not levels:
        return empty_figure(title)
    nodes = [np.zeros(1)]
    for k, level in enumerate(levels):
        values = _as_1d(level)
        if values.size != 1 << k:
            raise ValueError(f"level {k} must hold {1 << k} nodes, got {values.size}")
        nodes.append(values)
    return _draw_tree(
        np.concatenate(nodes),
        depth_count=len(levels),
        real_leaves=None,
        paths=[],
        highlight_leaves=set(),
        show_values=show_values,
        title=title,
    )


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
    nodes, leaves, n = _heap(masses)
    total = float(nodes[1])
    starts = np.concatenate([[0.0], np.cumsum(masses)[:-1]])
    fills = [SEGMENT_FILLS[i % 2] for i in range(n)]
    labelled = n <= MAX_LABELLED_SEGMENTS
    fig = go.Figure()
    fig.add_bar(
        x=masses,
        base=starts,
        y=np.zeros(n),
        orientation="h",
        width=0.5,
        name="leaves",
        marker={"color": fills, "line": {"color": "#ffffff", "width": 1}},
        # A label in a segment too narrow to hold it would be shrunk to a speck: leave it out.
        text=[
            str(i) if labelled and m >= MIN_LABELLED_SHARE * total else ""
            for i, m in enumerate(masses)
        ],
        textposition="inside",
        insidetextanchor="middle",
        textfont={"size": BASE_FONT_SIZE - 1, "color": "#333"},
        customdata=np.column_stack([np.arange(n), starts, starts + masses]),
        hovertemplate="leaf %{customdata[0]:.0f}<br>mass %{x:.4g}<br>"
        "covers [%{customdata[1]:.4g}, %{customdata[2]:.4g})<extra></extra>",
    )
    segment = total / batch_size
    # One layout update instead of B + 1 `add_shape` calls: each call re-validates the layout.
    shapes = [
        {
            "type": "line",
            "x0": k * segment,
            "x1": k * segment,
            "y0": -0.45,
            "y1": 0.45,
            "line": {"dash": "dash", "color": "#444", "width": 1.5},
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
    fig.update_layout(shapes=shapes, annotations=labels)
    q = _as_1d(queries) if queries is not None else np.zeros(0)
    if q.size:
        tree = SumTree(leaves, track_min=False)
        tree.update(np.arange(leaves), nodes[leaves:])
        hit = tree.find(q)
        text = [f"→ {h}" for h in hit] if q.size <= MAX_LABELLED_QUERIES else None
        fig.add_scatter(
            x=q,
            y=np.full(q.size, 0.33),
            mode="markers+text" if text else "markers",
            name="queries",
            text=text,
            textposition="top center",
            textfont={"size": BASE_FONT_SIZE - 1, "color": EMPHASIS},
            customdata=hit,
            marker={"symbol": "triangle-down", "size": 14, "color": EMPHASIS},
            hovertemplate="query mass %{x:.4g}<br>hits leaf %{customdata}<extra></extra>",
        )
    fig.update_yaxes(visible=False, range=[-0.75, 0.75], fixedrange=True)
    fig.update_xaxes(range=[-0.01 * total, 1.01 * total], showgrid=False, zeroline=False)
    return _style(
        fig,
        title=title
        or f"{default_title}: total mass {_compact(total)}, stratum {_compact(segment)}",
        x_title="cumulative mass (priority^α)",
        height=300,
    )


def draw_histogram_figure(
    counts: ArrayLike, probabilities: ArrayLike, *, title: str | None = None
) -> go.Figure:
    """Repeated draws: each leaf's empirical frequency (bars) against its target P(i) (markers).

    `probabilities` may be unnormalised (masses): the target is p_i / sum_k p_k. As draws
    accumulate the bars converge on the markers; the title shows the number of draws and the
    total variation distance 1/2 sum_i |f_i - P(i)|.
    """
    c = _as_1d(counts)
    p = _as_1d(probabilities)
    _same_length(counts=c, probabilities=p)
    if p.size == 0 or not p.sum() > 0:
        return empty_figure(title or "Repeated draws")
    target = p / p.sum()
    draws = float(c.sum())
    frequency = c / draws if draws > 0 else np.zeros_like(c)
    leaves = np.arange(p.size)
    heading = f"{draws:,.0f} draws"
    if draws > 0:
        distance = 0.5 * float(np.abs(frequency - target).sum())
        heading += f": total variation distance to P(i) {distance:.3f}"
    fig = go.Figure()
    fig.add_bar(
        x=leaves,
        y=frequency,
        name="observed frequency",
        marker={"color": _rgba(NEUTRAL, 0.55)},
        customdata=c,
        hovertemplate="leaf %{x}<br>frequency %{y:.3f} (%{customdata:,.0f} draws)<extra></extra>",
    )
    fig.add_scatter(
        x=leaves,
        y=target,
        mode="markers",
        name="target P(i)",
        marker={"symbol": "line-ew-open", "size": 30, "line": {"width": 3, "color": EMPHASIS}},
        hovertemplate="leaf %{x}<br>P(i) %{y:.3f}<extra></extra>",
    )
    fig.update_xaxes(range=[-0.6, p.size - 0.4])
    if p.size <= MAX_LABELLED_SEGMENTS:
        fig.update_xaxes(tickmode="array", tickvals=leaves.tolist())
    return _style(
        fig, title=title or heading, x_title="leaf", y_title="fraction of draws", legend=True
    )


# --------------------------------------------------------------------------- runs


def comparison_figure(
    runs: Mapping[str, Sequence[Curve]],
    *,
    total_steps: int,
    threshold: float | None = None,
    window: int = 20,
    title: str = "Replay schemes compared",
) -> go.Figure:
    """`rdqn.compare.report_figure` (mean curve and min-max band per scheme) as a styled Figure."""
    if not any(c.returns.size for curves in runs.values() for c in curves) or total_steps <= 0:
        return empty_figure(title)
    spec = report_figure(
        runs, total_steps=total_steps, threshold=threshold, window=window, title=title
    )
    fig = go.Figure(spec)
    _style(
        fig,
        title=title,
        x_title="environment steps",
        y_title=f"return (mean of last {window} episodes)",
        legend=True,
    )
    if threshold is not None:
        fig.add_annotation(
            x=1.0,
            xref="paper",
            y=threshold,
            yanchor="bottom",
            xanchor="right",
            text=f"threshold {threshold:g}",
            showarrow=False,
            font={"size": BASE_FONT_SIZE - 2, "color": "#444"},
        )
    return fig


def runs_overlay_figure(
    runs: Mapping[str, tuple[ArrayLike, ArrayLike]],
    smoothing: float = 0.9,
    *,
    colors: Mapping[str, str] | None = None,
    threshold: float | None = None,
    title: str = "Stored runs",
) -> go.Figure:
    """EMA-smoothed return curves of several runs, one line per run label.

    `runs` maps a label to (end_steps, returns). Colours come from `colors` by label, else from a
    scheme name ("uniform", "proportional", "rank") when the label is exactly one, else from
    Plotly's qualitative palette in order.
    """
    fig = go.Figure()
    palette = [c for c in qualitative.Plotly if c not in SCHEME_COLORS.values()]
    for k, (label, (end_steps, returns)) in enumerate(runs.items()):
        steps = _as_1d(end_steps)
        values = _as_1d(returns)
        _same_length(end_steps=steps, returns=values)
        if values.size == 0:
            continue
        color = (colors or {}).get(label) or SCHEME_COLORS.get(label) or palette[k % len(palette)]
        fig.add_scatter(
            x=steps,
            y=ema(values, smoothing),
            mode="lines",
            name=label,
            line={"color": color, "width": 3},
            hovertemplate=f"{label}<br>step %{{x:,}}<br>smoothed %{{y:.1f}}<extra></extra>",
        )
    if not fig.data:
        return empty_figure(title)
    if threshold is not None:
        _threshold_line(fig, threshold)
    return _style(
        fig,
        title=f"{title} (EMA {smoothing:g})",
        x_title="environment steps",
        y_title="episode return (smoothed)",
        legend=True,
    )


def timing_figure(timings: Mapping[str, float], *, title: str = "Where the time goes") -> go.Figure:
    """Seconds per phase (init, env, act, sample, update, evaluation) as horizontal bars.

    Sorted so the largest phase is on top; each bar is labelled with seconds and its share.
    """
    items = [(name, float(seconds)) for name, seconds in timings.items() if seconds != 0]
    for name, seconds in items:
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ValueError(f"timing of {name!r} must be finite and >= 0, got {seconds}")
    total = sum(seconds for _, seconds in items)
    if not items or total <= 0:
        return empty_figure(title)
    items.sort(key=lambda item: item[1])
    names = [name for name, _ in items]
    seconds = [s for _, s in items]
    labels = [f"{_seconds(s)} ({s / total:.0%})" for s in seconds]
    fig = go.Figure()
    fig.add_bar(
        x=seconds,
        y=names,
        orientation="h",
        name="seconds",
        text=labels,
        textposition="auto",
        marker={"color": NEUTRAL},
        hovertemplate="%{y}<br>%{text}<extra></extra>",
    )
    fig.update_xaxes(range=[0, 1.18 * max(seconds)])
    return _style(
        fig,
        title=f"{title}: {_seconds(total)} in total",
        x_title="seconds",
        height=max(260, 90 + 42 * len(items)),
    )


def _seconds(value: float) -> str:
    return f"{value:.3g} s" if value < 100 else f"{value:,.0f} s"
