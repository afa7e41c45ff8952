"""Curves over training: episode returns, losses, comparisons, stored runs, timings."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike, NDArray
from plotly.colors import qualitative

from rdqn.compare import ROLLING_WINDOW, Curve, aggregate
from rdqn.figures._base import (
    FAINT,
    NEUTRAL,
    SCHEME_COLORS,
    _as_1d,
    _line,
    _log_axis,
    _rgba,
    _same_length,
    _scheme_color,
    _style,
    _threshold_line,
    ema,
    empty_figure,
)

MAX_MARKERS = 150
"""The raw returns are drawn with a marker per episode up to this many points (`reward_curve`)."""


GREEDY_COLOR = "#222222"
"""The greedy returns' colour: no scheme's, and dark over every scheme's curve."""


def reward_curve(
    end_steps: ArrayLike,
    returns: ArrayLike,
    *,
    smoothing: float = 0.9,
    overlay: tuple[ArrayLike, ArrayLike] | None = None,
    overlay_label: str = "previous run",
    threshold: float | None = None,
    scheme: str | None = None,
    greedy: tuple[ArrayLike, ArrayLike] | None = None,
    evaluation: tuple[ArrayLike, ArrayLike] | None = None,
    title: str = "Episode return",
) -> go.Figure:
    """Episode returns against environment steps: the training's returns (which explore), raw
    (faint) and EMA-smoothed (`ema`).

    `overlay` = (end_steps, returns) of a previous run, drawn as its smoothed curve in dashed grey,
    so that the effect of changing alpha or beta stays visible after the restart. `threshold`
    adds a dotted horizontal line (e.g. 475 for CartPole-v1). `scheme` picks the line color.
    `greedy` = (env steps, returns) of the greedy episodes the run played for its watchers (no
    exploration: what the policy does), drawn as dark diamonds joined by a line. `evaluation` =
    (env steps, mean return) of the run's greedy evaluations on held-out seeds
    (`rdqn.training.evaluation`), drawn as dark squares joined by a dotted line.
    """
    none = (np.zeros(0), np.zeros(0))
    steps, values = _same_length(end_steps=end_steps, returns=returns)
    overlay_steps, overlay_values = (
        _same_length(overlay_end_steps=overlay[0], overlay_returns=overlay[1])
        if overlay is not None
        else none
    )
    greedy_steps, greedy_values = (
        _same_length(greedy_steps=greedy[0], greedy_returns=greedy[1]) if greedy else none
    )
    eval_steps, eval_values = (
        _same_length(evaluation_steps=evaluation[0], evaluation_means=evaluation[1])
        if evaluation
        else none
    )
    if values.size == 0 and overlay_values.size == 0:
        return empty_figure(title)

    color = _scheme_color(scheme)
    traces: list[dict[str, Any]] = []
    if overlay_values.size:
        traces.append(
            _line(
                overlay_steps,
                ema(overlay_values, smoothing),
                name=overlay_label,
                line={"color": FAINT, "width": 2.5, "dash": "dash"},
                hovertemplate=f"{overlay_label}<br>step %{{x:,}}<br>smoothed %{{y:.1f}}"
                "<extra></extra>",
            )
        )
    if values.size:
        raw = _line(
            steps,
            values,
            name="training return (explores)",
            line={"color": _rgba(color, 0.3), "width": 1},
            marker={"color": _rgba(color, 0.35), "size": 5},
            hovertemplate="step %{x:,}<br>return %{y:.1f}<extra></extra>",
        )
        # A marker per episode while they are few enough to tell apart; past that,
        # every redraw would restyle hundreds of markers for a blur.
        if raw["y"].size <= MAX_MARKERS:
            raw["mode"] = "lines+markers"
        traces.append(raw)
        traces.append(
            _line(
                steps,
                ema(values, smoothing),
                name=f"smoothed (EMA {smoothing:g})",
                line={"color": color, "width": 3},
                hovertemplate="step %{x:,}<br>smoothed %{y:.1f}<extra></extra>",
            )
        )
    if greedy_values.size:
        traces.append(
            {
                "type": "scatter",
                "x": greedy_steps,
                "y": greedy_values,
                "mode": "lines+markers",
                "name": "greedy return (watched)",
                "line": {"color": GREEDY_COLOR, "width": 1.5},
                "marker": {"color": GREEDY_COLOR, "size": 8, "symbol": "diamond"},
                "hovertemplate": "policy at step %{x:,}<br>greedy return %{y:.1f}<extra></extra>",
            }
        )
    if eval_values.size:
        traces.append(
            {
                "type": "scatter",
                "x": eval_steps,
                "y": eval_values,
                "mode": "lines+markers",
                "name": "greedy evaluation (held-out seeds)",
                "line": {"color": GREEDY_COLOR, "width": 2, "dash": "dot"},
                "marker": {"color": GREEDY_COLOR, "size": 9, "symbol": "square"},
                "hovertemplate": "policy at step %{x:,}<br>mean greedy return %{y:.1f} on the "
                "held-out seeds<extra></extra>",
            }
        )
    layout = _style(
        title=title,
        x_title="environment steps",
        y_title="episode return",
        legend=True,
        **(_threshold_line(threshold) if threshold is not None else {}),
    )
    return go.Figure(data=traces, layout=layout)


def loss_curve(
    updates: ArrayLike,
    losses: ArrayLike,
    td_abs_mean: ArrayLike | None = None,
    *,
    smoothing: float = 0.0,
    overlay: tuple[ArrayLike, ArrayLike] | None = None,
    overlay_label: str = "previous run",
    log_y: bool = False,
    scheme: str | None = None,
    title: str = "Training loss",
) -> go.Figure:
    """Loss per learner update, with the batch-mean |TD error| on a second y axis if given.

    `overlay` = (updates, mean |TD error|) of a previous run, drawn on the same right axis in
    dotted grey (smoothed like the run's own), so that a lesson can compare the errors the two
    runs studied.

    With `smoothing` > 0 (the page's EMA, as for the returns) both lines are smoothed (`ema`):
    raw, one value per update, they swing with every batch (the |TD error|'s dots drew a solid
    band); smoothing 0 draws them raw. `log_y` puts both y axes on a log scale (losses span
    orders of magnitude early on).
    """
    x, y = _same_length(updates=updates, losses=losses)
    if x.size == 0:
        return empty_figure(title)
    color = _scheme_color(scheme)
    smoothed = f" (EMA {smoothing:g})" if smoothing > 0 else ""
    loss = _line(
        x,
        ema(y, smoothing),
        name=f"loss{smoothed}",
        line={"color": color, "width": 2.5 if smoothing > 0 else 2},
        hovertemplate=f"update %{{x:,}}<br>loss{smoothed} %{{y:.4g}}<extra></extra>",
    )
    traces = [loss]
    extra: dict[str, Any] = {}
    if td_abs_mean is not None:
        x, td = _same_length(updates=x, td_abs_mean=td_abs_mean)
        width = 2.5 if smoothing > 0 else 1.5
        traces.append(_td_line(x, td, smoothing, "mean |TD error|" + smoothed, "#444", width))
        if overlay is not None and _as_1d(overlay[1]).size:
            old_x, old_td = _same_length(overlay_updates=overlay[0], overlay_td_abs_mean=overlay[1])
            # Named as on the reward chart; dotted like the run's own |TD error|.
            traces.append(_td_line(old_x, old_td, smoothing, overlay_label, FAINT, 2.5))
        extra["yaxis2"] = {
            "title": {"text": "mean |TD error|"},
            "overlaying": "y",
            "side": "right",
            "showgrid": False,
            # Round ticks of its own (Streamlit's theme otherwise aligns them to the left grid).
            "tickmode": "auto",
            **(_log_axis(td) if log_y else {}),
        }
        extra["margin"] = {"r": 72}  # room for the right-hand axis title
    yaxis = {"title": {"text": "loss (batch mean)"}, **(_log_axis(y) if log_y else {})}
    layout = _style(
        title=title,
        x_title="learner updates",
        legend=td_abs_mean is not None or smoothing > 0,
        yaxis=yaxis,
        **extra,
    )
    return go.Figure(data=traces, layout=layout)


def _td_line(
    updates: NDArray[np.float64],
    td_abs_mean: NDArray[np.float64],
    smoothing: float,
    name: str,
    color: str,
    width: float,
) -> dict[str, Any]:
    """A dotted mean-|TD error| line on the loss chart's right axis, smoothed by `smoothing`."""
    return _line(
        updates,
        ema(td_abs_mean, smoothing),
        name=name,
        yaxis="y2",
        line={"color": color, "width": width, "dash": "dot"},
        hovertemplate=f"{name}<br>update %{{x:,}}<br>mean |TD error| %{{y:.4g}}<extra></extra>",
    )


# --------------------------------------------------------------------------- distributions


def comparison_figure(
    runs: Mapping[str, Sequence[Curve]],
    *,
    total_steps: int,
    threshold: float | None = None,
    window: int = ROLLING_WINDOW,
    points: int = 200,
    labels: Mapping[str, str] | None = None,
    warm_up: int | None = None,
    title: str = "Replay schemes compared",
) -> go.Figure:
    """Per scheme, the mean learning curve over its seeds with a min-max band
    (`rdqn.compare.aggregate` on a grid of `points` env steps), and a dotted threshold line.

    `runs` is keyed by scheme, which picks the colour (`SCHEME_COLORS`); the legend names a
    scheme by ``labels[scheme]`` (its α and β₀, `rdqn.compare.scheme_label`) when given,
    and the number of seeds: 'rank · α 0.7 · β₀ 0.5 (3 seeds)', or '(2 of 3 seeds so far)' while
    some have no episode yet. `warm_up` (env steps before the first update) draws a dotted
    vertical line 'learning starts': before it every scheme plays the same way."""
    if not any(c.returns.size for curves in runs.values() for c in curves) or total_steps <= 0:
        return empty_figure(title)
    grid = np.linspace(0, total_steps, points).astype(np.int64)
    traces: list[dict[str, Any]] = []
    for scheme, curves in runs.items():
        color = _scheme_color(scheme)
        stats = aggregate(curves, grid, window)
        # Band edges are invisible even where a restyle widens every line (projector mode).
        edge = {"width": 0, "color": _rgba(color, 0.0)}
        band = {"x": grid, "mode": "lines", "line": edge, "hoverinfo": "skip"}
        band |= {"showlegend": False, "legendgroup": scheme}
        traces.append({"type": "scatter", "y": stats["high"], **band})
        traces.append(
            {"type": "scatter", "y": stats["low"], "fill": "tonexty", **band}
            | {"fillcolor": _rgba(color, 0.18)}
        )
        seeds = f"{len(curves)} seed{'s' if len(curves) != 1 else ''}"
        if (drawn := sum(1 for c in curves if c.returns.size)) < len(curves):
            seeds = f"{drawn} of {seeds} so far"  # the others queued or not past an episode
        traces.append(
            {
                "type": "scatter",
                "x": grid,
                "y": stats["mean"],
                "mode": "lines",
                "name": f"{(labels or {}).get(scheme, scheme)} ({seeds})",
                "line": {"color": color, "width": 3},
                "legendgroup": scheme,
            }
        )
    layout = _style(
        title=title,
        x_title="environment steps",
        y_title=f"return (mean of last {window} episodes)",
        legend=True,
    )
    if threshold is not None:
        layout |= _threshold_line(threshold)
    if warm_up:
        line = {"type": "line", "xref": "x", "yref": "paper", "x0": warm_up, "x1": warm_up}
        line |= {"y0": 0, "y1": 1, "line": {"color": NEUTRAL, "width": 1.5, "dash": "dot"}}
        note = {"x": warm_up, "xref": "x", "y": 1, "yref": "paper", "showarrow": False}
        note |= {"text": "learning starts", "xanchor": "left", "yanchor": "top"}
        note |= {"font": {"color": NEUTRAL}}
        layout["shapes"] = [*layout.get("shapes", []), line]
        layout["annotations"] = [*layout.get("annotations", []), note]
    return go.Figure(data=traces, layout=layout)


def runs_overlay_figure(
    runs: Mapping[str, tuple[ArrayLike, ArrayLike]],
    smoothing: float = 0.9,
    *,
    colors: Mapping[str, str] | None = None,
    schemes: Mapping[str, str] | None = None,
    threshold: float | None = None,
    title: str = "Stored runs",
) -> go.Figure:
    """EMA-smoothed return curves of several runs, one line per run label.

    `runs` maps a label (`rdqn.compare.run_label`) to (end_steps, returns). A run's colour
    is its scheme's (`SCHEME_COLORS`), the scheme taken from `schemes` by label, or the label
    itself when it is a scheme name; runs of the same scheme differ in their dash (solid,
    dashed, dotted, ...). `colors` by label overrides; a run of no known scheme takes the next
    colour of Plotly's qualitative palette.
    """
    traces: list[dict[str, Any]] = []
    palette = [c for c in qualitative.Plotly if c not in SCHEME_COLORS.values()]
    seen: dict[str, int] = {}
    for k, (label, (end_steps, returns)) in enumerate(runs.items()):
        steps, values = _same_length(end_steps=end_steps, returns=returns)
        if values.size == 0:
            continue
        scheme = (schemes or {}).get(label, label)
        color = (colors or {}).get(label) or SCHEME_COLORS.get(scheme) or palette[k % len(palette)]
        nth = seen[color] = seen.get(color, -1) + 1
        traces.append(
            _line(
                steps,
                ema(values, smoothing),
                name=label,
                line={"color": color, "width": 3, "dash": _DASHES[nth % len(_DASHES)]},
                hovertemplate=f"{label}<br>step %{{x:,}}<br>smoothed %{{y:.1f}}<extra></extra>",
            )
        )
    if not traces:
        return empty_figure(title)
    layout = _style(
        title=f"{title} (EMA {smoothing:g})",
        x_title="environment steps",
        y_title="episode return (smoothed)",
        legend=True,
        **(_threshold_line(threshold) if threshold is not None else {}),
    )
    return go.Figure(data=traces, layout=layout)


_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
"""Line dashes that tell apart runs of one scheme (one colour) in `runs_overlay_figure`."""


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
    bars = {
        "type": "bar",
        "x": seconds,
        "y": names,
        "orientation": "h",
        "name": "seconds",
        "text": labels,
        "textposition": "auto",
        "marker": {"color": NEUTRAL},
        "hovertemplate": "%{y}<br>%{text}<extra></extra>",
    }
    layout = _style(
        title=f"{title}: {_seconds(total)} in total",
        x_title="seconds",
        height=max(260, 90 + 42 * len(items)),
        xaxis={"range": [0, 1.18 * max(seconds)]},
    )
    return go.Figure(data=[bars], layout=layout)


def _seconds(value: float) -> str:
    return f"{value:.3g} s" if value < 100 else f"{value:,.0f} s"
