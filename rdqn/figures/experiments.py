"""Figures of the experiments (`rdqn.experiments`): the PER paper's Blind Cliffwalk figure and the
PER notebook's study. Pure builders: a results file's parsed rows in, a `go.Figure` out (the
notebook's figures are described where they are built, below).

Blind Cliffwalk (Schaul et al. 2015, figure 1): learner updates until the Q-values are learned
against the number of transitions in the fixed memory, N = 2^(n+1) - 2, both on log scales; one
line per replay scheme through the median over the seeds, with a band from the fastest to the
slowest seed, and a dotted line where the updates equal N (one replay per stored transition). A
point where half the seeds or more did not learn within the cap is left out (the line breaks
there); a band whose slowest seed did not learn stops at its fastest.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike, NDArray

from rdqn.figures._base import (
    BASE_FONT_SIZE,
    SCHEME_COLORS,
    _hline,
    _log_axis,
    _log_ticks,
    _rgba,
    _style,
    empty_figure,
)

__all__ = [
    "EXPERIMENT_COLORS",
    "SCHEME_NAMES",
    "buffer_td_figure",
    "cliffwalk_figure",
    "probe_heatmap",
    "reward_bands_figure",
    "seed_fractions",
    "stage_histograms_figure",
]

EXPERIMENT_COLORS: dict[str, str] = {**SCHEME_COLORS, "oracle": "#111111"}
"""The schemes' colours of every page, and black for the paper's oracle."""
SCHEME_NAMES: dict[str, str] = {
    "uniform": "uniform",
    "proportional": "proportional",
    "rank": "rank-based",
    "oracle": "oracle",
}


def cliffwalk_figure(
    summary: Sequence[Mapping[str, Any]],
    *,
    threshold: float | None = None,
    title: str = "Blind Cliffwalk: updates until Q is learned",
    height: int = 480,
) -> go.Figure:
    """The figure of the module docstring from `rdqn.experiments.cliffwalk.cliffwalk_summary`
    rows (scheme, n, memory_size, median, min, max, learned, seeds)."""
    if not summary:
        return empty_figure(title)
    traces: list[dict[str, Any]] = []
    values: list[float] = []
    for scheme in dict.fromkeys(row["scheme"] for row in summary):
        rows = sorted((r for r in summary if r["scheme"] == scheme), key=lambda r: r["n"])
        color = EXPERIMENT_COLORS.get(scheme, "#5b6b8c")
        x = np.array([r["memory_size"] for r in rows], dtype=np.float64)
        median = _column(rows, "median")
        low, high = _column(rows, "min"), _column(rows, "max")
        high = np.where(np.isnan(high), low, high)
        values += [v for v in (*median, *low, *high) if np.isfinite(v)]
        name = SCHEME_NAMES.get(scheme, scheme)
        traces.append(_range_band(x, low, high, color, group=scheme))
        hover = [
            f"n = {r['n']}, N = {r['memory_size']:,}<br>median {_number(r['median'])}, "
            f"range {_number(r['min'])}-{_number(r['max'])}<br>"
            f"learned {r['learned']}/{len(r['seeds'])}"
            for r in rows
        ]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": x,
                "y": median,
                "name": name,
                "legendgroup": scheme,
                "line": {"color": color, "width": 3},
                "marker": {"size": 7},
                "text": hover,
                "hovertemplate": "%{text}<extra>" + name + "</extra>",
            }
        )
    sizes = np.array([r["memory_size"] for r in summary], dtype=np.float64)
    span = np.array([sizes.min(), sizes.max()])
    traces.append(
        {
            "type": "scatter",
            "mode": "lines",
            "x": span,
            "y": span,
            "name": "updates = N",
            "line": {"color": "#888888", "width": 1.5, "dash": "dot"},
            "hoverinfo": "skip",
        }
    )
    what = f"MSE to Q* < {threshold:g}" if threshold is not None else "Q learned"
    layout = _style(
        title=title,
        x_title="transitions in the replay memory, N = 2^(n+1) - 2",
        y_title=f"updates until {what}",
        legend=True,
        height=height,
        xaxis=_log_axis(sizes),
        yaxis=_log_axis(np.array(values)) if values else {"type": "log"},
    )
    return go.Figure(data=traces, layout=layout)


def _column(rows: Sequence[Mapping[str, Any]], key: str) -> np.ndarray:
    return np.array([np.nan if r[key] is None else r[key] for r in rows], dtype=np.float64)


def _number(value: float | None) -> str:
    return "not learned" if value is None else f"{value:,.0f}"


# ------------------------------------------------------------------ the PER notebook's study
#
# Figures of `rdqn.experiments.per_notebook` trials (the results file's "trials"): curves are the
# median over the seeds with a band from the lowest to the highest seed. Histograms are not pooled:
# each seed's histogram becomes fractions of its own total first, then every bin gets the median
# of the seeds' fractions and their lowest and highest (`seed_fractions`), drawn as a line with a
# band (stages) or as a median heatmap over a heatmap of the spread (probes over time).


def _by_scheme(trials: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    schemes: dict[str, list[Mapping[str, Any]]] = {}
    for trial in sorted(trials, key=lambda t: (t["scheme"] != "uniform", t["seed"])):
        schemes.setdefault(trial["scheme"], []).append(trial)
    return schemes


def _band_traces(
    x: np.ndarray, stacked: np.ndarray, scheme: str, name: str, *, dash: str = "solid"
) -> list[dict[str, Any]]:
    """Median line over the rows of ``stacked`` (seeds x points) and its min-max band."""
    color = EXPERIMENT_COLORS.get(scheme, "#5b6b8c")
    with np.errstate(all="ignore"):
        valid = ~np.isnan(stacked).all(axis=0)
        x, stacked = x[valid], stacked[:, valid]
        median = np.nanmedian(stacked, axis=0)
        low, high = np.nanmin(stacked, axis=0), np.nanmax(stacked, axis=0)
    return [
        _range_band(x, low, high, color, group=name),
        {
            "type": "scatter",
            "mode": "lines",
            "x": x,
            "y": median,
            "name": name,
            "legendgroup": name,
            "line": {"color": color, "width": 3, "dash": dash},
            "hovertemplate": "step %{x:,}<br>%{y:.3g}<extra>" + name + "</extra>",
        },
    ]


def _range_band(
    x: np.ndarray, low: np.ndarray, high: np.ndarray, color: str, *, group: str
) -> dict[str, Any]:
    """The shaded area between ``low`` and ``high`` over ``x`` (points where either is not
    finite left out), in legend group ``group``."""
    band_x = np.concatenate([x, x[::-1]])
    band_y = np.concatenate([high, low[::-1]])
    keep = np.isfinite(band_y)
    return {
        "type": "scatter",
        "x": band_x[keep],
        "y": band_y[keep],
        "mode": "lines",
        "fill": "toself",
        "fillcolor": _rgba(color, 0.15),
        "line": {"width": 0},
        "hoverinfo": "skip",
        "showlegend": False,
        "legendgroup": group,
    }


def _scheme_name(trial: Mapping[str, Any]) -> str:
    if trial["scheme"] == "uniform":
        return "uniform"
    return f"{trial['scheme']} (α {trial['alpha']:g}, β₀ {trial['beta0']:g} → 1)"


def reward_bands_figure(
    trials: Sequence[Mapping[str, Any]],
    *,
    threshold: float | None = None,
    window: int = 20,
    points: int = 300,
    title: str = "Return: rolling mean of 20 episodes",
    height: int = 440,
) -> go.Figure:
    """Each scheme's learning curve (the rolling mean of ``window`` returns as a step function
    of env steps, `rdqn.compare.learning_curve`), median over the seeds with a min-max band."""
    from rdqn.compare import Curve, learning_curve

    if not trials:
        return empty_figure(title)
    total = max(int(t["env_steps"]) for t in trials)
    grid = np.linspace(0, total, points).astype(np.int64)
    traces: list[dict[str, Any]] = []
    for scheme, runs in _by_scheme(trials).items():
        curves = [
            Curve(np.array(r["end_steps"], np.int64), np.array(r["returns"], np.float64))
            for r in runs
        ]
        stacked = np.vstack([learning_curve(c, grid, window) for c in curves])
        name = f"{_scheme_name(runs[0])}, {len(runs)} seed{'s' if len(runs) != 1 else ''}"
        traces += _band_traces(grid.astype(np.float64), stacked, scheme, name)
    extra: dict[str, Any] = {}
    if threshold is not None:
        shape, note = _hline(threshold, f"threshold {threshold:g}", below=True)
        extra = {"shapes": [shape], "annotations": [note]}
    layout = _style(
        title=title,
        x_title="environment steps",
        y_title="return",
        legend=True,
        height=height,
        **extra,
    )
    return go.Figure(data=traces, layout=layout)


def buffer_td_figure(
    trials: Sequence[Mapping[str, Any]],
    *,
    title: str = "Mean |TD error|: the whole buffer (solid) and the sampled batches (dashed)",
    height: int = 440,
) -> go.Figure:
    """At each probe, the mean |delta| over every stored transition under the current nets, and
    the mean |delta| of the batches replayed since the previous probe; median over the seeds with
    a min-max band, log scale."""
    if not trials:
        return empty_figure(title)
    traces: list[dict[str, Any]] = []
    values: list[float] = []
    for scheme, runs in _by_scheme(trials).items():
        x = np.array(runs[0]["probes"]["env_steps"], dtype=np.float64)
        for key, label, dash in (
            ("buffer_td_mean", "buffer", "solid"),
            ("sampled_td_mean", "sampled", "dash"),
        ):
            stacked = np.array(
                [
                    [np.nan if v is None else v for v in r["probes"][key]][: x.shape[0]]
                    for r in runs
                ],
                dtype=np.float64,
            )
            values += stacked[np.isfinite(stacked)].tolist()
            name = f"{scheme}: {label}"
            traces += _band_traces(x, stacked, scheme, name, dash=dash)
    layout = _style(
        title=title,
        x_title="environment steps",
        y_title="mean |TD error|",
        legend=True,
        height=height,
        yaxis=_log_axis(np.array(values)),
    )
    return go.Figure(data=traces, layout=layout)


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
    c = np.asarray(counts, dtype=np.float64)
    totals = c.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        fractions = np.where(totals > 0, c / np.where(totals > 0, totals, 1.0), np.nan)
    empty = np.full(c.shape[1:], np.nan)
    if c.shape[0] == 0 or np.isnan(fractions).all(axis=0).all():
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
    ticks, text = _log_ticks(float(edges[0]), float(edges[-1]))
    by_scheme = _by_scheme(chosen)
    traces: list[dict[str, Any]] = []
    layout_axes: dict[str, Any] = {}
    for k, (start, end) in enumerate(_panels(len(labels))):
        suffix = "" if k == 0 else str(k + 1)
        layout_axes[f"xaxis{suffix}"] = {
            "domain": [start, end],
            "range": [float(edges[0]), float(edges[-1])],
            "tickmode": "array",
            "tickvals": ticks,
            "ticktext": text,
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
    tickvals, ticktext = _log_ticks(float(edges[0]), float(edges[-1]))
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
    y_axis = {"tickmode": "array", "tickvals": tickvals, "ticktext": ticktext}
    thin_axis = {"tickmode": "array", "tickvals": tickvals[::2], "ticktext": ticktext[::2]}
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
