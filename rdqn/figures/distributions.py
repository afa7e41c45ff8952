"""Replay distributions: priorities, IS weights, TD errors, sampler check, ages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike, NDArray
from plotly.colors import sample_colorscale

from rdqn.figures._base import (
    NEUTRAL,
    SCHEME_COLORS,
    _compact,
    _hline,
    _log_axis,
    _power_ticks,
    _rgba,
    _same_length,
    _style,
    _vline,
    empty_figure,
)
from rdqn.training.telemetry import (
    TD_STAGES,
    BatchView,
    GoodnessOfFit,
    Histogram,
    HistogramHistory,
)


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
    lines = [] if reference is None else [_vline(reference, reference_label)]
    return _histogram(
        hist,
        title=title,
        x_title=x_title,
        y_title=y_title,
        color=color,
        lines=lines,
        log_x_labels=log_x_labels,
    )


def _histogram(
    hist: Histogram,
    *,
    title: str,
    x_title: str,
    y_title: str,
    color: str | None,
    lines: list[tuple[dict[str, Any], dict[str, Any]]],
    log_x_labels: bool = False,
    x_range: list[float] | None = None,
) -> go.Figure:
    """`histogram_figure` of a non-empty `hist`, with the dotted `lines` (`_hline`, `_vline`)."""
    if log_x_labels:
        customdata = [_compact(10.0**c) for c in hist.centers]
        hover = f"{x_title}<br>≈ %{{customdata}}<br>{y_title} %{{y:,.0f}}<extra></extra>"
    else:
        customdata = None
        hover = f"{x_title}<br>%{{x:.3g}}<br>{y_title} %{{y:,.0f}}<extra></extra>"
    bars = {
        "type": "bar",
        "x": hist.centers,
        "y": hist.counts,
        "width": np.diff(hist.edges) * 0.92,
        "marker": {"color": color or NEUTRAL},
        "customdata": customdata,
        "hovertemplate": hover,
        "name": y_title,
    }
    xaxis = _power_ticks(hist.edges) if log_x_labels else {}
    if x_range is not None:
        xaxis["range"] = x_range
    layout = _style(
        title=title,
        x_title=x_title,
        y_title=y_title,
        xaxis=xaxis,
        bargap=0,
        shapes=[shape for shape, _ in lines],
        annotations=[annotation for _, annotation in lines],
    )
    return go.Figure(data=[bars], layout=layout)


def column_fractions(counts: ArrayLike) -> NDArray[np.float64]:
    """Rows of `counts` (one histogram per time step; the last axis holds the bins) as fractions
    of their own totals; all-zero rows become NaN."""
    c = np.asarray(counts, dtype=np.float64)
    totals = c.sum(axis=-1, keepdims=True)
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
    heat = {
        "type": "heatmap",
        "x": history.steps,
        "y": centers,
        "z": z,
        "zmin": 0.0,
        "colorscale": "Viridis",
        "colorbar": {"title": {"text": "fraction"}, "tickformat": ".0%", "thickness": 14},
        "hovertemplate": f"update %{{x:,}}<br>{y_title} %{{y:.3g}}<br>"
        "fraction %{z:.1%}<extra></extra>",
    }
    yaxis = _power_ticks(history.edges) if log_y_labels else {}
    layout = _style(title=title, x_title=x_title, y_title=y_title, yaxis=yaxis)
    return go.Figure(data=[heat], layout=layout)


def td_stages_figure(
    stages: Mapping[str, Histogram], *, title: str = "|TD error| as training goes on"
) -> go.Figure:
    """One line per training stage ("10%", "25%", ...) of the recent |TD error| distribution.

    Counts are normalised to fractions so that stages with different numbers of samples compare;
    colours run from light (early) to dark (late) in the order the stages are given. The x axis
    is logarithmic: each stage is binned from 0 to its own largest |TD|, and those maxima differ
    by orders of magnitude over training, so a linear axis squeezed the early stages against 0.
    """
    shown = {name: h for name, h in stages.items() if not _is_empty(h)}
    if not shown:
        return empty_figure(title, f"the first curve comes at {TD_STAGES[0]:.0%} of training")
    positions = np.linspace(0.35, 1.0, len(shown)) if len(shown) > 1 else [1.0]
    colors = sample_colorscale("Blues", list(positions))
    traces = [
        {
            "type": "scatter",
            "x": hist.centers,
            "y": hist.counts / hist.counts.sum(),
            "mode": "lines",
            "name": f"{name} of training",
            "line": {"color": color, "width": 3},
            "hovertemplate": f"{name}<br>|TD| %{{x:.3g}}<br>fraction %{{y:.1%}}<extra></extra>",
        }
        for (name, hist), color in zip(shown.items(), colors, strict=True)
    ]
    centers = np.concatenate([h.centers for h in shown.values()])
    top = max(float(np.max(t["y"])) for t in traces)
    layout = _style(
        title=title,
        x_title="|TD error| (log scale)",
        y_title="fraction of recent samples",
        legend=True,
        xaxis=_log_axis(centers),
        # Room above the highest point: autorange put it on the plot's top edge, under the legend.
        yaxis={"tickformat": ".0%", "range": [0.0, 1.1 * top]},
    )
    return go.Figure(data=traces, layout=layout)


def p_value_text(p_value: float) -> str:
    """'p < 0.001' below the check's resolution, else p to 2 decimals (3 below 0.01)."""
    if p_value < 1e-3:
        return "p < 0.001"
    return f"p = {p_value:.3f}" if p_value < 0.01 else f"p = {p_value:.2f}"


def fit_figure(fit: GoodnessOfFit | None, *, title: str = "Sampler check") -> go.Figure:
    """Per bin of slots (of ranks, for rank-based replay): observed draws minus the draws P(i)
    predicts (dots), over the range a correct sampler stays in 95 % of the time (grey bars).

    The ranges come from the null law of the sampler's own draws (`rdqn.training.sampler_check`):
    stratified draws keep every bin within a few draws of its expected count. Dots inside the
    bars and a p-value anywhere in (0, 1] mean a correct sampler; p < 0.001 again and again
    means it does not draw in proportion to P(i). The title carries p.
    """
    if fit is None or fit.observed.size == 0:
        return empty_figure(title)
    edges = np.asarray(fit.bin_edges, dtype=np.float64)
    centers = 0.5 * (edges[1:] + edges[:-1])
    first = 1 if fit.axis == "rank" else 0  # ranks count from 1, slots from 0
    ranges = [
        f"{int(a) + first}–{int(b) - 1 + first}" for a, b in zip(edges[:-1], edges[1:], strict=True)
    ]
    expected = np.asarray(fit.expected, dtype=np.float64)
    customdata = [
        [span, f"{o:,.0f}", f"{e:,.1f}", f"{lo:,.0f}", f"{hi:,.0f}"]
        for span, o, e, lo, hi in zip(
            ranges, fit.observed, expected, fit.low, fit.high, strict=True
        )
    ]
    hover_head = f"{fit.axis}s %{{customdata[0]}}<br>"
    band = {
        "type": "bar",
        "x": centers,
        "base": fit.low - expected,
        "y": fit.high - fit.low,
        "width": np.diff(edges) * 0.9,
        "name": "correct sampler (95 %)",
        "marker": {"color": _rgba(NEUTRAL, 0.25)},
        "customdata": customdata,
        "hovertemplate": hover_head + "a correct sampler: %{customdata[3]}–%{customdata[4]} "
        "draws<extra></extra>",
    }
    observed = {
        "type": "scatter",
        "x": centers,
        "y": fit.observed - expected,
        "mode": "markers",
        "name": "observed − expected",
        "marker": {"color": "#222", "size": 9, "symbol": "diamond"},
        "customdata": customdata,
        "hovertemplate": hover_head + "observed %{customdata[1]}, expected %{customdata[2]}"
        "<extra></extra>",
    }
    x_title = "rank (1 = highest priority)" if fit.axis == "rank" else fit.axis
    zero, _ = _hline(0.0, "")
    layout = _style(
        title=f"{title}: {p_value_text(fit.p_value)}",
        x_title=x_title,
        y_title="draws − expected",
        legend=True,
        bargap=0,
        shapes=[zero],
    )
    return go.Figure(data=[band, observed], layout=layout)


def age_figure(
    hist: Histogram | None, *, title: str = "Which memories get replayed", color: str | None = None
) -> go.Figure:
    """Sampled transitions by age as a fraction of the buffer (0 = newest, 1 = oldest).

    The dotted line is what uniform replay would give: the same count in every age bin.
    """
    if _is_empty(hist):
        return empty_figure(title)
    assert hist is not None
    return _histogram(
        hist,
        title=title,
        x_title="age (0 = newest, 1 = oldest)",
        y_title="samples",
        color=color,
        lines=[_hline(float(hist.counts.mean()), "uniform replay")],
        x_range=[float(hist.edges[0]), float(hist.edges[-1])],
    )


def weights_scatter(
    batch: BatchView | None,
    *,
    title: str = "Last batch: rare items get large weights",
    with_ess: bool = True,
) -> go.Figure:
    """One point per sampled item: P(i) (log x) against its IS weight, sized and coloured by |TD|.

    Items the sampler rarely picks (small P(i)) carry the largest weights, w_i ∝ (N P(i))^-beta.
    With `with_ess` the title adds the batch's effective sample size.
    """
    if batch is None or batch.probabilities.size == 0:
        return empty_figure(title)
    td = np.asarray(batch.td_abs, dtype=np.float64)
    top = float(td.max()) if td.size else 0.0
    sizes = 8.0 + 22.0 * td / top if top > 0 else np.full(td.shape, 12.0)
    customdata = np.column_stack([batch.indices, batch.ages, td])
    points = {
        "type": "scatter",
        "x": batch.probabilities,
        "y": batch.weights,
        "mode": "markers",
        "name": "sampled items",
        "customdata": customdata,
        "marker": {
            "size": sizes,
            "color": td,
            "colorscale": "Viridis",
            "showscale": True,
            "colorbar": {"title": {"text": "|TD error|"}, "thickness": 14},
            "line": {"width": 0.5, "color": "#333"},
            "opacity": 0.85,
        },
        "hovertemplate": "slot %{customdata[0]:.0f} (age %{customdata[1]:.0f})<br>"
        "P(i) %{x:.3g}<br>weight %{y:.3f}<br>|TD| %{customdata[2]:.3g}<extra></extra>",
    }
    full_title = (
        f"{title} (ESS {batch.ess:.1f} of {batch.probabilities.size})" if with_ess else title
    )
    layout = _style(
        title=full_title,
        x_title="sampling probability P(i), log scale",
        y_title="IS weight w_i",
        xaxis=_log_axis(np.asarray(batch.probabilities, dtype=np.float64)),
    )
    return go.Figure(data=[points], layout=layout)


def probability_weight_bars(
    probabilities: ArrayLike,
    weights: ArrayLike,
    *,
    title: str = "Sampling probability vs IS weight",
) -> go.Figure:
    """Per row of a small batch: its sampling probability P(i) beside its IS weight w_i, one
    pair of bars each: the likelier a row, the smaller its weight."""
    p, w = _same_length(probabilities=probabilities, weights=weights)
    if p.size == 0:
        return empty_figure(title)
    rows = np.arange(1, p.size + 1)
    bars = [
        {
            "type": "bar",
            "x": rows,
            "y": values,
            "name": name,
            "marker": {"color": color},
            "hovertemplate": f"row %{{x}}<br>{name} %{{y:.3f}}<extra></extra>",
        }
        for name, values, color in (
            ("P(i)", p, SCHEME_COLORS["proportional"]),
            ("IS weight wᵢ", w, NEUTRAL),
        )
    ]
    layout = _style(
        title=title,
        x_title="row",
        legend=True,
        xaxis={"tickmode": "array", "tickvals": rows.tolist()},
        yaxis={"range": [0.0, 1.1 * max(float(p.max()), float(w.max()), 1e-12)]},
        barmode="group",
    )
    return go.Figure(data=bars, layout=layout)
