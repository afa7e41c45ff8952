"""Replay distributions: priorities, IS weights, TD errors, sampler check, ages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike, NDArray
from plotly.colors import sample_colorscale

from dashboard.figures._base import (
    NEUTRAL,
    _compact,
    _hline,
    _log_axis,
    _log_ticks,
    _rgba,
    _style,
    _vline,
    empty_figure,
)
from rdqn.training.telemetry import BatchView, GoodnessOfFit, Histogram, HistogramHistory


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
    bars, layout = _histogram_spec(
        hist,
        title=title,
        x_title=x_title,
        y_title=y_title,
        color=color,
        log_x_labels=log_x_labels,
        reference=reference,
        reference_label=reference_label,
    )
    return go.Figure(data=[bars], layout=layout)


def _histogram_spec(
    hist: Histogram,
    *,
    title: str,
    x_title: str,
    y_title: str,
    color: str | None,
    log_x_labels: bool = False,
    reference: float | None = None,
    reference_label: str = "",
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(bar trace, layout) of `histogram_figure` for a non-empty `hist`, as plain dicts."""
    centers = hist.centers
    widths = np.diff(hist.edges)
    if log_x_labels:
        customdata = [_compact(10.0**c) for c in centers]
        hover = f"{x_title}<br>≈ %{{customdata}}<br>{y_title} %{{y:,.0f}}<extra></extra>"
    else:
        customdata = None
        hover = f"{x_title}<br>%{{x:.3g}}<br>{y_title} %{{y:,.0f}}<extra></extra>"
    bars = {
        "type": "bar",
        "x": centers,
        "y": hist.counts,
        "width": widths * 0.92,
        "marker": {"color": color or NEUTRAL},
        "customdata": customdata,
        "hovertemplate": hover,
        "name": y_title,
    }
    xaxis: dict[str, Any] = {}
    if log_x_labels:
        tickvals, ticktext = _log_ticks(float(hist.edges[0]), float(hist.edges[-1]))
        xaxis.update(tickmode="array", tickvals=tickvals, ticktext=ticktext)
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    if reference is not None:
        shape, annotation = _vline(reference, reference_label)
        shapes.append(shape)
        annotations.append(annotation)
    layout = _style(
        title=title,
        x_title=x_title,
        y_title=y_title,
        xaxis=xaxis,
        bargap=0,
        shapes=shapes,
        annotations=annotations,
    )
    return bars, layout


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
    yaxis: dict[str, Any] = {}
    if log_y_labels:
        tickvals, ticktext = _log_ticks(float(history.edges[0]), float(history.edges[-1]))
        yaxis.update(tickmode="array", tickvals=tickvals, ticktext=ticktext)
    layout = _style(title=title, x_title=x_title, y_title=y_title, yaxis=yaxis)
    return go.Figure(data=[heat], layout=layout)


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
    layout = _style(
        title=title,
        x_title="|TD error|",
        y_title="fraction of recent samples",
        legend=True,
        yaxis={"tickformat": ".0%"},
    )
    return go.Figure(data=traces, layout=layout)


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
    observed = {
        "type": "bar",
        "x": centers,
        "y": fit.observed,
        "width": np.diff(edges) * 0.9,
        "name": "observed",
        "marker": {"color": _rgba(NEUTRAL, 0.55)},
        "customdata": ranges,
        "hovertemplate": "slots %{customdata}<br>observed %{y:,.0f}<extra></extra>",
    }
    expected = {
        "type": "scatter",
        "x": centers,
        "y": fit.expected,
        "mode": "lines+markers",
        "name": "expected from P(i)",
        "line": {"color": "#222", "width": 2},
        "marker": {"size": 8, "symbol": "diamond"},
        "customdata": ranges,
        "hovertemplate": "slots %{customdata}<br>expected %{y:,.1f}<extra></extra>",
    }
    layout = _style(title=full_title, x_title="buffer slot", y_title="draws", legend=True, bargap=0)
    return go.Figure(data=[observed, expected], layout=layout)


def age_figure(
    hist: Histogram | None, *, title: str = "Which memories get replayed", color: str | None = None
) -> go.Figure:
    """Sampled transitions by age as a fraction of the buffer (0 = newest, 1 = oldest).

    The dotted line is what uniform replay would give: the same count in every age bin.
    """
    if _is_empty(hist):
        return empty_figure(title)
    assert hist is not None
    bars, layout = _histogram_spec(
        hist,
        title=title,
        x_title="age (0 = newest, 1 = oldest)",
        y_title="samples",
        color=color,
    )
    shape, annotation = _hline(float(hist.counts.mean()), "uniform replay")
    layout["shapes"].append(shape)
    layout["annotations"].append(annotation)
    layout["xaxis"]["range"] = [float(hist.edges[0]), float(hist.edges[-1])]
    return go.Figure(data=[bars], layout=layout)


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
    full_title = f"{title} (ESS {batch.ess:.1f} of {batch.probabilities.size})"
    layout = _style(
        title=full_title,
        x_title="sampling probability P(i), log scale",
        y_title="IS weight w_i",
        xaxis=_log_axis(np.asarray(batch.probabilities, dtype=np.float64)),
    )
    return go.Figure(data=[points], layout=layout)


# --------------------------------------------------------------------------- sum tree
