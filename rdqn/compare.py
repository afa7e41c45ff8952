"""Comparing replay schemes across seeds: learning curves on a common grid, thresholds, a report.

A learning curve is the rolling mean of the last `window` episode returns, as a step function of
environment steps (the value at step x is what had been achieved by then). Curves of several seeds
are sampled on one grid of env steps and summarised by their mean and a min-max band.

The HTML report is a Plotly figure written as plain JSON (Plotly's figure schema) next to the
plotly.js bundle shipped with the plotly package, so this module needs no plotting import and the
report opens offline.
"""

from __future__ import annotations

import html
import importlib.util
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = [
    "SCHEME_COLORS",
    "Curve",
    "aggregate",
    "episodes_to_threshold",
    "learning_curve",
    "report_figure",
    "summary_table",
    "write_report",
]

SCHEME_COLORS = {"uniform": "#636efa", "proportional": "#ef553b", "rank": "#00a884"}


@dataclass(frozen=True)
class Curve:
    """One run's episodes: the env step at which each ended and its return."""

    end_steps: NDArray[np.int64]
    returns: NDArray[np.float64]


def rolling_mean(values: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    """Mean of the last `window` values at each position (fewer at the start)."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return values
    csum = np.cumsum(np.insert(values, 0, 0.0))
    idx = np.arange(1, values.size + 1)
    start = np.maximum(idx - window, 0)
    return (csum[idx] - csum[start]) / (idx - start)


def learning_curve(curve: Curve, grid: NDArray[np.int64], window: int = 20) -> NDArray[np.float64]:
    """Rolling-mean return achieved by each grid step (NaN before the first episode ends)."""
    smooth = rolling_mean(curve.returns, window)
    position = np.searchsorted(curve.end_steps, grid, side="right") - 1
    out = np.full(grid.shape, np.nan)
    ok = position >= 0
    out[ok] = smooth[position[ok]]
    return out


def aggregate(
    curves: Sequence[Curve], grid: NDArray[np.int64], window: int = 20
) -> dict[str, NDArray[np.float64]]:
    """Mean, min and max across runs of their learning curves on `grid` (NaN-aware)."""
    if not curves:
        nan = np.full(grid.shape, np.nan)
        return {"mean": nan, "low": nan, "high": nan}
    stacked = np.vstack([learning_curve(c, grid, window) for c in curves])
    with np.errstate(all="ignore"):
        valid = ~np.isnan(stacked).all(axis=0)
        out = {name: np.full(grid.shape, np.nan) for name in ("mean", "low", "high")}
        out["mean"][valid] = np.nanmean(stacked[:, valid], axis=0)
        out["low"][valid] = np.nanmin(stacked[:, valid], axis=0)
        out["high"][valid] = np.nanmax(stacked[:, valid], axis=0)
    return out


def episodes_to_threshold(
    curve: Curve, threshold: float, window: int = 20
) -> tuple[int | None, int | None]:
    """(episodes, env steps) until the rolling mean of `window` returns first reaches threshold."""
    smooth = rolling_mean(curve.returns, window)
    # Require a full window so one lucky first episode does not count.
    hits = np.flatnonzero((smooth >= threshold) & (np.arange(smooth.size) >= window - 1))
    if hits.size == 0:
        return None, None
    return int(hits[0] + 1), int(curve.end_steps[hits[0]])


def summary_table(
    runs: Mapping[str, Sequence[Curve]], threshold: float | None, window: int = 20
) -> pd.DataFrame:
    """One row per scheme: seeds, final return (mean of the last `window` episodes), and the
    mean episodes / env steps to the threshold over the seeds that reached it."""
    rows = []
    for scheme, curves in runs.items():
        finals = [float(np.mean(c.returns[-window:])) for c in curves if c.returns.size]
        row: dict[str, Any] = {
            "scheme": scheme,
            "seeds": len(curves),
            "final return (mean)": float(np.mean(finals)) if finals else np.nan,
            "final return (min)": float(np.min(finals)) if finals else np.nan,
        }
        if threshold is not None:
            reached = [episodes_to_threshold(c, threshold, window) for c in curves]
            hit = [r for r in reached if r[0] is not None]
            row["reached threshold"] = f"{len(hit)}/{len(curves)}"
            row["episodes to threshold"] = float(np.mean([h[0] for h in hit])) if hit else np.nan
            row["steps to threshold"] = float(np.mean([h[1] for h in hit])) if hit else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def report_figure(
    runs: Mapping[str, Sequence[Curve]],
    *,
    total_steps: int,
    threshold: float | None = None,
    window: int = 20,
    points: int = 200,
    title: str = "Replay schemes compared",
) -> dict[str, Any]:
    """A Plotly figure (as a JSON-able dict): mean learning curve per scheme with a min-max band."""
    grid = np.linspace(0, total_steps, points).astype(np.int64)
    x = grid.tolist()
    traces: list[dict[str, Any]] = []
    for scheme, curves in runs.items():
        color = SCHEME_COLORS.get(scheme, "#888888")
        stats = aggregate(curves, grid, window)

        def clean(values: NDArray[np.float64]) -> list[float | None]:
            return [None if np.isnan(v) else float(v) for v in values]

        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": clean(stats["high"]),
                "mode": "lines",
                "line": {"width": 0},
                "hoverinfo": "skip",
                "showlegend": False,
                "legendgroup": scheme,
            }
        )
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": clean(stats["low"]),
                "mode": "lines",
                "line": {"width": 0},
                "fill": "tonexty",
                "fillcolor": _rgba(color, 0.18),
                "hoverinfo": "skip",
                "showlegend": False,
                "legendgroup": scheme,
            }
        )
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": clean(stats["mean"]),
                "mode": "lines",
                "name": f"{scheme} ({len(curves)} seed{'s' if len(curves) != 1 else ''})",
                "line": {"color": color, "width": 3},
                "legendgroup": scheme,
            }
        )
    layout: dict[str, Any] = {
        "title": {"text": title},
        "xaxis": {"title": {"text": "environment steps"}},
        "yaxis": {"title": {"text": f"return (mean of last {window} episodes)"}},
        "template": "plotly_white",
        "legend": {"orientation": "h", "y": -0.2},
    }
    if threshold is not None:
        layout["shapes"] = [
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": threshold,
                "y1": threshold,
                "line": {"dash": "dot", "color": "#444"},
            }
        ]
    return {"data": traces, "layout": layout}


def _plotly_js() -> str:
    spec = importlib.util.find_spec("plotly")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            bundle = Path(location) / "package_data" / "plotly.min.js"
            if bundle.exists():
                return f"<script>{bundle.read_text(encoding='utf-8')}</script>"
    return '<script src="https://cdn.plot.ly/plotly-2.35.2.min.js"></script>'


def write_report(
    path: str | Path, figure: Mapping[str, Any], table: pd.DataFrame, *, heading: str
) -> Path:
    """Write a self-contained HTML page with the figure and the summary table."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(heading)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2rem;max-width:1100px}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}
</style>{_plotly_js()}</head>
<body><h1>{html.escape(heading)}</h1>
<div id="curves" style="height:520px"></div>
{table.to_html(index=False, float_format=lambda v: f"{v:,.1f}", na_rep="-")}
<script>
const fig = {json.dumps(figure)};
Plotly.newPlot("curves", fig.data, fig.layout, {{responsive: true}});
</script></body></html>
"""
    path.write_text(page, encoding="utf-8")
    return path
