"""Figures of the experiments (`rdqn.experiments`): the PER paper's Blind Cliffwalk figure and the
PER notebook study's curves (its histograms over seeds are `rdqn.figures.seed_histograms`), and the
greedy evaluations of the MinAtar study (one figure per game) and of the recurrent replay study
(`rdqn.figures.evaluations`). Pure
builders: a results file's parsed rows in, a `go.Figure` out (the notebook's figures are
described where they are built, below).

Blind Cliffwalk (Schaul et al. 2015, figure 1): learner updates until the Q-values are learned
against the number of transitions in the fixed memory, N = 2^(n+1) - 2, both on log scales; one
line per replay scheme through the median over the seeds, with a band from the fastest to the
slowest seed, and a dotted line where the updates equal N (one replay per stored transition). A
point where half the seeds or more did not learn within the cap is left out (the line breaks
there); a band whose slowest seed did not learn stops at its fastest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from rdqn.config import SCHEMES
from rdqn.experiments.recurrent import RECURRENT_ARMS
from rdqn.figures._base import (
    NEUTRAL,
    SCHEME_COLORS,
    _log_axis,
    _rgba,
    _style,
    _threshold_line,
    empty_figure,
)
from rdqn.figures.evaluations import evaluation_figure
from rdqn.training.evaluation import Evaluations

__all__ = [
    "EXPERIMENT_COLORS",
    "SCHEME_NAMES",
    "buffer_td_figure",
    "cliffwalk_figure",
    "minatar_figures",
    "minatar_page",
    "recurrent_figures",
    "recurrent_page",
    "reward_bands_figure",
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
# median over the seeds with a band from the lowest to the highest seed. The histograms, never
# pooled over the seeds, are `rdqn.figures.seed_histograms`.


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
    layout = _style(
        title=title,
        x_title="environment steps",
        y_title="return",
        legend=True,
        height=height,
        **(_threshold_line(threshold) if threshold is not None else {}),
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


def _greedy_figures(
    report: Mapping[str, Any],
    group: str,
    arm: str,
    arms: Sequence[str],
    named: Callable[[str], tuple[str, str]],
    colors: Mapping[str, str] | None = None,
) -> dict[str, go.Figure]:
    """Per ``group`` value of the results file's trials (`rdqn.experiments.greedy`): its
    `evaluation_figure`, one curve per ``arm`` value in the order of ``arms``, under the key and
    title ``named`` gives."""
    figures: dict[str, go.Figure] = {}
    trials = report["trials"]
    for where in dict.fromkeys(t[group] for t in trials):
        runs: dict[str, list[Evaluations]] = {a: [] for a in arms}
        for trial in (t for t in trials if t[group] == where):
            done = trial["evaluations"]
            returns = np.asarray(done["returns"], np.float64).reshape(len(done["env_steps"]), -1)
            steps = np.asarray(done["env_steps"], np.int64)
            lengths = np.zeros_like(returns, np.int64)  # not drawn
            runs.setdefault(trial[arm], []).append(Evaluations(steps, returns, lengths))
        key, title = named(where)
        runs = {a: group_runs for a, group_runs in runs.items() if group_runs}
        figures[key] = evaluation_figure(runs, colors=colors, title=title)
    return figures


def _page(figures: Mapping[str, go.Figure]) -> str:
    """An HTML page of ``figures``, one after the other."""
    parts = [
        figure.to_html(include_plotlyjs=i == 0, full_html=False)
        for i, figure in enumerate(figures.values())
    ]
    head = "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
    return head + "".join(parts) + "</body></html>"


def minatar_figures(report: Mapping[str, Any]) -> dict[str, go.Figure]:
    """``minatar_<game>`` -> that game's greedy curves, one per scheme
    (`rdqn.experiments.minatar`)."""

    def named(game: str) -> tuple[str, str]:
        name = game.removeprefix("rdqn/MinAtar-").removesuffix("-v0")
        return f"minatar_{name.lower()}", (
            f"MinAtar {name}: greedy return on held-out seeds (mean, min-max)"
        )

    return _greedy_figures(report, "game", "scheme", SCHEMES, named)


def minatar_page(report: Mapping[str, Any]) -> str:
    """An HTML page of `minatar_figures`, one after the other."""
    return _page(minatar_figures(report))


RECURRENT_COLORS = {
    "windows": SCHEME_COLORS["uniform"],
    "stored-state": SCHEME_COLORS["proportional"],
    "zero-state": SCHEME_COLORS["rank"],
    "zero-state-no-burn-in": NEUTRAL,
}
"""One colour per arm of `rdqn.experiments.recurrent`."""


def recurrent_figures(report: Mapping[str, Any]) -> dict[str, go.Figure]:
    """``recurrent`` -> the greedy curves of masked CartPole, one per replay arm
    (`rdqn.experiments.recurrent`)."""

    def named(env: str) -> tuple[str, str]:
        return "recurrent", "Masked CartPole: greedy return on held-out seeds (mean, min-max)"

    return _greedy_figures(report, "env", "arm", RECURRENT_ARMS, named, RECURRENT_COLORS)


def recurrent_page(report: Mapping[str, Any]) -> str:
    """An HTML page of `recurrent_figures`."""
    return _page(recurrent_figures(report))
