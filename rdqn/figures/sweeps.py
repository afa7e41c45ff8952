"""Figures of a sweep (`rdqn.sweeps`): one measure over two grid axes as a heatmap, and the
reward curves of one grid cell's trials.

The heatmap's colour is the mean over a cell's seeds, on a scale no narrower than the seeds'
spread (`colour_range`); each cell's text says ``mean ± sd`` (the sample standard deviation over
the seeds, 0 for one seed) and how many seeds it stands for; its hover adds, where given, the
interquartile mean over the seeds with its 95 % stratified bootstrap interval (`rdqn.stats`).
Clicks land on a transparent marker at each cell's centre (Plotly reports no click on a
heatmap itself), whose ``customdata`` is the cell's key; the nearest centre takes any click
inside the plot (``hoverdistance`` -1), so a click anywhere in a cell picks that cell.

The reward curve of a trial is the one `rdqn.sweeps.summary` integrates: R(s), the mean return
of the last W episodes that ended by env step s, 0 before the first episode ends, held until
the next episode ends (drawn as steps). The cell's mean curve is the mean of its finished seeds'
R(s) at every step where one of them changes, up to the budget T, so its normalised area
(1/T) * integral_0^T mean R(s) ds is the mean of the seeds' AUCs: the heatmap's value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike, NDArray

from rdqn.compare import ROLLING_WINDOW, Curve, rolling_mean
from rdqn.figures._base import (
    _line,
    _rgba,
    _scheme_color,
    _style,
    _threshold_line,
    empty_figure,
)
from rdqn.stats import Interval

__all__ = [
    "RELATIVE_COLOUR_SPAN",
    "SeedCurve",
    "cell_curves_figure",
    "colour_range",
    "decimals_for",
    "reward_steps",
    "short_number",
    "sweep_heatmap",
]

_SELECTED = "#111111"
_SEED_DASHES = ("solid", "dot", "dashdot", "longdash", "longdashdot")
"""Finished seeds' lines, told apart (a trial not finished is dashed)."""


def short_number(value: float, decimals: int | None = None) -> str:
    """A cell's number, short: ``1,234`` from 1,000 on, else three significant digits (or
    ``decimals`` places, as `decimals_for` gives them to a mean and its spread alike)."""
    if not math.isfinite(value):
        return "—"
    if decimals is None:
        decimals = decimals_for(value)
    return f"{value:,.{decimals}f}"


def decimals_for(value: float) -> int:
    """Decimal places that show ``value`` to three significant digits (none from 100 on; at
    most 6): 0.921 -> 3, 0.00908 -> 5, 103 -> 0."""
    if not math.isfinite(value) or value == 0:
        return 0 if value == 0 else 3
    return min(6, max(0, 2 - math.floor(math.log10(abs(value)))))


RELATIVE_COLOUR_SPAN = 0.01
"""The colour scale spans at least this fraction of the largest |mean|: cells that differ by
less look alike, not as far apart as the palette goes."""


def colour_range(mean: NDArray[np.float64], spread: NDArray[np.float64]) -> tuple[float, float]:
    """The heatmap's colour range: the cells' means, widened about their midpoint to span at
    least the largest spread over seeds and `RELATIVE_COLOUR_SPAN` of the largest |mean|, so
    that a difference within the seeds' noise (or a rounding's worth) does not look like the
    whole palette. With means lo..hi: span = max(hi - lo, max sd, 0.01 * max |mean|), and the
    range is (lo + hi) / 2 -+ span / 2; at least 1e-12 wide (equal means)."""
    finite = mean[np.isfinite(mean)]
    lo, hi = float(finite.min()), float(finite.max())
    spreads = spread[np.isfinite(spread)]
    noise = float(spreads.max()) if spreads.size else 0.0
    span = max(hi - lo, noise, RELATIVE_COLOUR_SPAN * max(abs(lo), abs(hi)), 1e-12)
    middle = (lo + hi) / 2
    return middle - span / 2, middle + span / 2


def sweep_heatmap(
    mean: ArrayLike,
    spread: ArrayLike,
    notes: Sequence[Sequence[str]],
    keys: Sequence[Sequence[str]],
    *,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    x_title: str,
    y_title: str,
    measure: str,
    lower_is_better: bool = False,
    selected: str | None = None,
    title: str = "",
    intervals: ArrayLike | None = None,
) -> go.Figure:
    """A heatmap of ``mean`` (rows: ``y_labels``, columns: ``x_labels``; NaN: no result),
    each cell written ``mean ± spread`` over its ``notes`` (how many seeds), and a clickable
    marker per cell carrying its key (``keys``). The colour scale runs the same way whatever
    the measure: the better end is yellow (``lower_is_better`` for steps to a threshold). The
    ``selected`` cell (a key) is framed. ``intervals`` (rows, columns, 3), each cell's IQM over
    its seeds and its 95 % interval's ends, adds ``IQM [95% CI]`` to the cells' hover."""
    z = np.asarray(mean, dtype=np.float64).reshape(len(y_labels), len(x_labels))
    sd = np.asarray(spread, dtype=np.float64).reshape(z.shape)
    if z.size == 0:
        return empty_figure(title, "no grid cells")
    text = [
        [_cell_text(z[i, j], sd[i, j], notes[i][j]) for j in range(z.shape[1])]
        for i in range(z.shape[0])
    ]
    xs = [x_labels[j] for i in range(z.shape[0]) for j in range(z.shape[1])]
    ys = [y_labels[i] for i in range(z.shape[0]) for j in range(z.shape[1])]
    flat_keys = [keys[i][j] for i in range(z.shape[0]) for j in range(z.shape[1])]
    cells = np.full((z.size, 3), np.nan) if intervals is None else np.asarray(intervals)
    iqms = [_iqm_text(Interval(*cell)) for cell in cells.reshape(z.size, 3).astype(np.float64)]
    hover = [
        f"{x_title} = {x}<br>{y_title} = {y}<br>{measure}: {cell.replace('<br>', ' ')}{iqm}"
        "<br><i>click for its curves</i>"
        for x, y, cell, iqm in zip(xs, ys, (c for row in text for c in row), iqms, strict=True)
    ]
    heat = {
        "type": "heatmap",
        "z": z,
        "x": list(x_labels),
        "y": list(y_labels),
        "text": text,
        "texttemplate": "%{text}",
        "colorscale": "Viridis",
        "reversescale": lower_is_better,
        "colorbar": {"title": {"text": measure, "side": "right"}},
        "hoverinfo": "skip",
        "xgap": 2,
        "ygap": 2,
    }
    marks = {
        "type": "scatter",
        "x": xs,
        "y": ys,
        "customdata": flat_keys,
        "mode": "markers",
        "marker": {"symbol": "square", "size": 40, "color": "rgba(0,0,0,0)"},
        "hovertext": hover,
        "hovertemplate": "%{hovertext}<extra></extra>",
        "showlegend": False,
    }
    if not np.isfinite(z).any():  # no result yet: a grey grid with the cells' notes
        heat |= {"z": np.zeros_like(z), "colorscale": [[0, "#eeeeee"], [1, "#eeeeee"]]}
        heat |= {"showscale": False, "reversescale": False}
    else:
        heat["zmin"], heat["zmax"] = colour_range(z, sd)
    layout = _style(
        title=title,
        x_title=x_title,
        y_title=y_title,
        xaxis={"type": "category", "showgrid": False},
        yaxis={"type": "category", "showgrid": False},
        hoverdistance=-1,
        plot_bgcolor="#f4f4f4",
    )
    if selected is not None and selected in flat_keys:
        at = flat_keys.index(selected)
        i, j = divmod(at, z.shape[1])
        layout["shapes"] = [
            {
                "type": "rect",
                "xref": "x",
                "yref": "y",
                "x0": j - 0.5,
                "x1": j + 0.5,
                "y0": i - 0.5,
                "y1": i + 0.5,
                "line": {"color": _SELECTED, "width": 4},
            }
        ]
    return go.Figure(data=[heat, marks], layout=layout)


def _cell_text(mean: float, sd: float, note: str) -> str:
    """``mean ± sd`` (both to the mean's decimals) over ``(note)``; ``—`` with no mean."""
    if not math.isfinite(mean):
        return f"—<br>({note})"
    places = decimals_for(abs(mean) or sd)  # a mean of 0 takes the spread's decimals
    return f"{short_number(mean, places)} ± {short_number(sd, places)}<br>({note})"


def _iqm_text(interval: Interval) -> str:
    """``<br>IQM [95% CI] 0.860 [0.750–0.970]`` (to the IQM's three significant digits); none
    without an IQM."""
    if not math.isfinite(interval.estimate):
        return ""
    places = decimals_for(abs(interval.estimate) or interval.high - interval.low)
    return f"<br>IQM [95% CI] {interval.text(lambda v: short_number(v, places))}"


@dataclass(frozen=True)
class SeedCurve:
    """One trial of a cell: its label (``seed 3``, ``seed 4 (stopped)``), its episodes,
    whether it has finished (only finished trials count in the mean, as in the summary)."""

    label: str
    curve: Curve
    finished: bool


def reward_steps(curve: Curve, at: ArrayLike, window: int = ROLLING_WINDOW) -> NDArray[np.float64]:
    """R(s) at the env steps ``at``: the mean return of the last ``window`` episodes that had
    ended by then, 0 before the first (the step function `rdqn.sweeps.summary` integrates).

    Episodes ending at steps 2 and 5 with returns 1 and 3, window 2: R at steps 0, 2, 4, 5, 9
    is 0, 1, 1, 2, 2."""
    steps = np.asarray(at, dtype=np.int64)
    smooth = rolling_mean(curve.returns, window)
    position = np.searchsorted(curve.end_steps, steps, side="right") - 1
    out = np.zeros(steps.shape, dtype=np.float64)
    ok = position >= 0
    out[ok] = smooth[position[ok]]
    return out


def _seed_line(curve: Curve, window: int, total_steps: int | None) -> tuple[NDArray, NDArray]:
    """The steps of R(s) from 0: at 0, at each episode's end, and at the budget if finished."""
    ends = curve.end_steps
    if total_steps is not None:
        ends = ends[ends <= total_steps]
    x = np.concatenate([[0], ends, [total_steps] if total_steps is not None else []])
    x = x.astype(np.int64)
    return x, reward_steps(curve, x, window)


def _return_steps(
    x: NDArray[np.int64], y: NDArray[np.float64], name: str, line: dict[str, Any]
) -> dict[str, Any]:
    return _line(
        x,
        y,
        line=line,
        name=name,
        hovertemplate=f"{name}<br>step %{{x:,}}<br>return %{{y:.3g}}<extra></extra>",
    )


def cell_curves_figure(
    seeds: Sequence[SeedCurve],
    *,
    total_steps: int,
    window: int = ROLLING_WINDOW,
    threshold: float | None = None,
    scheme: str | None = None,
    title: str = "Reward curves of the cell",
) -> go.Figure:
    """Each seed's R(s) as a thin step line (solid, dotted, ...; a trial not finished
    dashed, up to its last episode) and the mean over the finished seeds as a thick one, in
    ``scheme``'s colour; a dotted ``threshold`` line. The module docstring says why the
    mean's area is the heatmap's value."""
    drawn = [seed for seed in seeds if seed.curve.returns.size]
    if not drawn:
        return empty_figure(title, "no episode has ended yet")
    color = _scheme_color(scheme)
    traces: list[dict[str, Any]] = []
    for k, seed in enumerate(drawn):
        dash = _SEED_DASHES[k % len(_SEED_DASHES)] if seed.finished else "dash"
        line = {"color": _rgba(color, 0.45), "width": 1.5, "shape": "hv", "dash": dash}
        x, y = _seed_line(seed.curve, window, total_steps if seed.finished else None)
        traces.append(_return_steps(x, y, seed.label, line))
    finished = [seed.curve for seed in drawn if seed.finished]
    if finished:
        x = np.unique(np.concatenate([_seed_line(c, window, total_steps)[0] for c in finished]))
        y = np.mean([reward_steps(c, x, window) for c in finished], axis=0)
        name = f"mean of {len(finished)} seed{'s' if len(finished) != 1 else ''}"
        traces.append(_return_steps(x, y, name, {"color": color, "width": 4, "shape": "hv"}))
    layout = _style(
        title=title,
        x_title="environment steps",
        y_title=f"return (mean of last {window} episodes)",
        legend=True,
        **(_threshold_line(threshold) if threshold is not None else {}),
    )
    return go.Figure(data=traces, layout=layout)
