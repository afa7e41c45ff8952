"""The PER notebook study's histograms over seeds (`rdqn.experiments.per_notebook` trials).

Histograms are not pooled: each seed's histogram becomes fractions of its own total first, then
every bin gets the median of the seeds' fractions and their lowest and highest
(`seed_fractions`). They are drawn by training stage as a line with a band, one panel a stage
(`stage_histograms_figure`), and over the probes as a median heatmap above a heatmap of the
spread (`probe_heatmap`). The study's curves are `rdqn.figures.experiments`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike, NDArray

from rdqn.figures._base import BASE_FONT_SIZE, _power_ticks, _rgba, _style, empty_figure
from rdqn.figures.distributions import column_fractions
from rdqn.figures.experiments import EXPERIMENT_COLORS, _by_scheme, _range_band

__all__ = ["probe_heatmap", "seed_fractions", "stage_histograms_figure"]


def seed_fractions(
    counts: ArrayLike,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(median, lowest, highest) over the seeds of their histograms as fractions.

    ``counts`` holds the seeds along its first axis and the bins along its last (with any axes
    between, such as probes): each histogram is divided by its own total (one with no counts is
    left out), then every cell gets the median, min and max over the seeds; NaN where no seed
    has counts. Three seeds' counts [[1, 3], [2, 2], [0, 4]] give fractions [.25, .75],
    [.5, .5], [0, 1]: median [.25, .75], lowest [0, .5], highest [.5, 1]. The medians of the
    bins need not add up to 1.
    """
    fractions = column_fractions(counts)
    empty = np.full(fractions.shape[1:], np.nan)
    if fractions.shape[0] == 0 or np.isnan(fractions).all(axis=0).all():
        return empty, empty.copy(), empty.copy()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells stay NaN
        return (
            np.nanmedian(fractions, axis=0),
            np.nanmin(fractions, axis=0),
            np.nanmax(fractions, axis=0),
        )


def _seeds_text(count: int) -> str:
    return f"{count} seed{'s' if count != 1 else ''}"


def _panels(count: int, gap: float = 0.04) -> list[tuple[float, float]]:
    width = (1.0 - gap * (count - 1)) / count
    return [(k * (width + gap), k * (width + gap) + width) for k in range(count)]


def _bin_steps(edges: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A histogram's outline: each bin's value held flat from its left to its right edge."""
    return np.repeat(edges, 2)[1:-1], np.repeat(values, 2)


def _with_subtitle(layout: dict[str, Any], text: str) -> dict[str, Any]:
    layout["title"]["subtitle"] = {"text": text, "font": {"size": BASE_FONT_SIZE - 1}}
    return layout


def stage_histograms_figure(
    trials: Sequence[Mapping[str, Any]],
    key: str,
    edges_key: str,
    *,
    title: str,
    schemes: Sequence[str] | None = None,
    height: int = 400,
) -> go.Figure:
    """One panel per training stage (its axis title names the stage's updates): the histogram
    ``key`` of the sampled batches (the trials' "stages"), one line and band per scheme. Each
    seed's histogram is taken as fractions of its own total; the line is the median of the
    seeds' fractions in each bin, the band runs from the lowest seed to the highest
    (`seed_fractions`). The x axes hold log10 values labelled as powers of ten, and the figure's
    title names the quantity, its subtitle the statistics."""
    chosen = [t for t in trials if schemes is None or t["scheme"] in schemes]
    if not chosen:
        return empty_figure(title)
    labels = chosen[0]["stages"]["labels"]
    edges = np.array(chosen[0]["edges"][edges_key], dtype=np.float64)
    by_scheme = _by_scheme(chosen)
    traces: list[dict[str, Any]] = []
    layout_axes: dict[str, Any] = {}
    for k, (start, end) in enumerate(_panels(len(labels))):
        suffix = "" if k == 0 else str(k + 1)
        layout_axes[f"xaxis{suffix}"] = {
            "domain": [start, end],
            "range": [float(edges[0]), float(edges[-1])],
            **_power_ticks(edges),
            "anchor": f"y{suffix}",
            "title": {"text": f"updates {labels[k]}"},
        }
        layout_axes[f"yaxis{suffix}"] = {
            "anchor": f"x{suffix}",
            "tickformat": ".0%",
            "rangemode": "tozero",
            "showticklabels": k == 0,
            **({"matches": "y"} if k else {}),
        }
        for scheme, runs in by_scheme.items():
            median, low, high = seed_fractions([r["stages"][key][k] for r in runs])
            if np.isnan(median).all():
                continue
            color = EXPERIMENT_COLORS.get(scheme, "#5b6b8c")
            name = f"{scheme}, {_seeds_text(len(runs))}"
            x, y = _bin_steps(edges, median)
            _, y_low = _bin_steps(edges, low)
            _, y_high = _bin_steps(edges, high)
            hover = np.repeat(
                [
                    f"{_power(a)} to {_power(b)}<br>median {m:.1%}, seeds {lo:.1%} to {hi:.1%}"
                    for a, b, m, lo, hi in zip(
                        edges[:-1], edges[1:], median, low, high, strict=True
                    )
                ],
                2,
            )
            axes = {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}
            band = _range_band(x, y_low, y_high, color, group=name)
            traces.append({**band, "fillcolor": _rgba(color, 0.25), **axes})
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": x,
                    "y": y,
                    "name": name,
                    "legendgroup": name,
                    "showlegend": k == 0,
                    "line": {"color": color, "width": 2.5},
                    "text": hover,
                    "hovertemplate": "%{text}<extra>" + name + "</extra>",
                    **axes,
                }
            )
    layout = _style(title=title, legend=True, height=height, **layout_axes)
    counts = sorted({len(runs) for runs in by_scheme.values()})
    seeds = _seeds_text(counts[-1]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]} seeds"
    return go.Figure(
        data=traces,
        layout=_with_subtitle(
            layout,
            f"line: median over {seeds} of each seed's fraction in the bin; "
            "band: lowest to highest seed",
        ),
    )


def _power(exponent: float) -> str:
    """A log10 bin edge as the value it stands for: -1.0 -> '0.1', 0.3 -> '2', 2.0 -> '100'."""
    value = 10.0**exponent
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"


def probe_heatmap(
    trials: Sequence[Mapping[str, Any]],
    key: str,
    edges_key: str,
    *,
    title: str,
    y_title: str,
    height: int = 600,
) -> go.Figure:
    """A distribution over the buffer at every probe (the trials' probe histograms ``key``) over
    the given trials' seeds: x = learner updates, y = log10 bins labelled as powers of ten. Top
    panel: colour = the median over the seeds of each seed's fraction of that probe's
    transitions in the bin; bottom panel: the spread, the highest seed's fraction minus the
    lowest's (`seed_fractions`). Both panels share one colour scale, so a cell of the spread
    reads against the medians above it; the median's hover names the lowest and highest seed."""
    chosen = [t for t in trials if t["probes"].get(key)]
    if not chosen:
        return empty_figure(title)
    rows = min(len(t["probes"][key]) for t in chosen)
    median, low, high = seed_fractions([t["probes"][key][:rows] for t in chosen])
    edges = np.array(chosen[0]["edges"][edges_key], np.float64)
    centers = 0.5 * (edges[1:] + edges[:-1])
    steps = np.array(chosen[0]["probes"]["updates"][:rows], np.int64)
    spread = high - low
    top = float(np.nanmax([np.nanmax(median), np.nanmax(spread)]))
    seeds = _seeds_text(len(chosen))
    heat = {
        "type": "heatmap",
        "x": steps,
        "y": centers,
        "coloraxis": "coloraxis",
    }
    median_hover = f"update %{{x:,}}<br>{y_title} %{{y:.3g}}<br>median %{{z:.1%}}"
    traces = [
        {
            **heat,
            "z": median.T,
            "customdata": np.stack([low.T, high.T], axis=-1),
            "name": "median",
            "hovertemplate": median_hover
            + ", seeds %{customdata[0]:.1%} to %{customdata[1]:.1%}<extra></extra>",
        },
        {
            **heat,
            "z": spread.T,
            "xaxis": "x2",
            "yaxis": "y2",
            "name": "spread",
            "hovertemplate": f"update %{{x:,}}<br>{y_title} %{{y:.3g}}<br>"
            "highest - lowest seed %{z:.1%}<extra></extra>",
        },
    ]
    y_axis = _power_ticks(edges)
    thin_axis = {**y_axis, "tickvals": y_axis["tickvals"][::2], "ticktext": y_axis["ticktext"][::2]}
    labels = [
        _panel_label(f"median of {seeds}", "y domain"),
        _panel_label("spread: highest minus lowest seed", "y2 domain"),
    ]
    layout = _style(
        title=title,
        height=height,
        xaxis={"anchor": "y", "showticklabels": False, "matches": "x2"},
        yaxis={**y_axis, "domain": [0.42, 0.95], "title": {"text": y_title}},
        xaxis2={"anchor": "y2", "title": {"text": "learner updates"}},
        yaxis2={**thin_axis, "domain": [0.0, 0.31], "title": {"text": y_title}},
        coloraxis={
            "colorscale": "Viridis",
            "cmin": 0.0,
            "cmax": top if np.isfinite(top) and top > 0 else 1.0,
            "colorbar": {
                "title": {"text": "fraction"},
                "tickformat": ".0%",
                "thickness": 14,
            },
        },
        annotations=labels,
    )
    return go.Figure(
        data=traces,
        layout=_with_subtitle(
            layout,
            f"colour: share of the buffer's transitions in the bin at each probe, {seeds}",
        ),
    )


def _panel_label(text: str, yref: str) -> dict[str, Any]:
    """A panel's name, left-aligned just above its plot area."""
    return {
        "text": f"<b>{text}</b>",
        "x": 0.0,
        "xref": "x domain" if yref == "y domain" else "x2 domain",
        "xanchor": "left",
        "y": 1.0,
        "yref": yref,
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": BASE_FONT_SIZE},
    }
