"""Greedy evaluations compared: each group's mean evaluation return over its seeds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from rdqn.figures._base import _rgba, _scheme_color, _style, _threshold_line, empty_figure
from rdqn.training.evaluation import Evaluations

__all__ = ["evaluation_figure", "seed_band"]


def seed_band(runs: Sequence[Evaluations]) -> tuple[np.ndarray, ...]:
    """(env steps, mean, low, high, seeds) over the runs' evaluations: at each env step some run
    was evaluated at, the mean over those runs of their R̄ (each run's mean over its held-out
    seeds), its lowest and highest, and how many runs it is over."""
    steps = np.unique(np.concatenate([run.env_steps for run in runs] or [np.zeros(0, np.int64)]))
    values = [[r.means[r.env_steps == s] for r in runs] for s in steps]
    at = [np.concatenate(v) for v in values]
    return (
        steps,
        np.array([v.mean() for v in at]),
        np.array([v.min() for v in at]),
        np.array([v.max() for v in at]),
        np.array([v.size for v in at]),
    )


def evaluation_figure(
    runs: Mapping[str, Sequence[Evaluations]],
    *,
    labels: Mapping[str, str] | None = None,
    colors: Mapping[str, str] | None = None,
    threshold: float | None = None,
    title: str = "Greedy evaluation on held-out seeds",
) -> go.Figure:
    """Per scheme (the key, which picks the colour), the mean over its seeds of their greedy
    evaluations (`seed_band`) with a min-max band; the legend names it by ``labels[scheme]``;
    ``colors`` gives keys that are not schemes their colours."""
    if not any(len(run) for group in runs.values() for run in group):
        return empty_figure(title)
    traces: list[dict[str, Any]] = []
    for scheme, group in runs.items():
        steps, mean, low, high, seeds = seed_band([run for run in group if len(run)])
        if not steps.size:
            continue
        color = (colors or {}).get(scheme) or _scheme_color(scheme)
        edge = {"width": 0, "color": _rgba(color, 0.0)}
        band = {"x": steps, "mode": "lines", "line": edge, "hoverinfo": "skip"}
        band |= {"showlegend": False, "legendgroup": scheme}
        traces.append({"type": "scatter", "y": high, **band})
        traces.append(
            {"type": "scatter", "y": low, "fill": "tonexty", **band}
            | {"fillcolor": _rgba(color, 0.18)}
        )
        traces.append(
            {
                "type": "scatter",
                "x": steps,
                "y": mean,
                "customdata": seeds,
                "mode": "lines+markers",
                "name": f"{(labels or {}).get(scheme, scheme)} ({len(group)} seed"
                f"{'s' if len(group) != 1 else ''})",
                "line": {"color": color, "width": 3},
                "marker": {"color": color, "size": 8, "symbol": "square"},
                "legendgroup": scheme,
                "hovertemplate": "policy at step %{x:,}<br>mean greedy return %{y:.1f} over "
                "%{customdata} seeds<extra></extra>",
            }
        )
    layout = _style(
        title=title, x_title="environment steps", y_title="greedy return (mean)", legend=True
    )
    if threshold is not None:
        layout |= _threshold_line(threshold)
    return go.Figure(data=traces, layout=layout)
