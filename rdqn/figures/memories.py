"""The memory explorer's charts ("Memories replayed"): where in the env the surprising memories
are, and how often memories of each age were replayed against uniform replay's expectation; for
sequence replay, each listed sequence's steps coloured by their |TD error|.

Both draw `rdqn.training.memories.Memories.drawn`, a thinned set of the stored transitions whose
numbers are exact. Points carry their slot in ``customdata`` (first column), so a click on one
names the memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from rdqn.figures._base import (
    SCHEME_COLORS,
    _log_axis,
    _scheme_color,
    _style,
    empty_figure,
)
from rdqn.training.memory_view import Memories, SequenceRows

__all__ = [
    "replays_by_age_figure",
    "sequence_steps_figure",
    "surprise_figure",
    "surprise_measure",
]

_COLOR_SCALE = "Viridis"
FRAME_CELLS = 100
"""A MinAtar frame's pose: its 100 cells (`rdqn.envs.poses`)."""


def surprise_measure(memories: Memories) -> tuple[np.ndarray, str]:
    """What the surprise chart puts on its y axis: the stored priority p = |δ| + eps where the
    scheme keeps one; under uniform replay (which keeps none) P(i), which is 1/N for all."""
    drawn = memories.drawn
    if np.isfinite(drawn.priorities).any():
        return drawn.priorities, "stored priority p = |δ| + ε"
    return drawn.probabilities, "P(i) (uniform: 1/N)"


def surprise_figure(
    memories: Memories | None, *, title: str = "Where the surprise is"
) -> go.Figure:
    """Stored priority against the env's meaningful coordinates, one panel per coordinate
    (CartPole: pole angle and cart position; a row env: the state index; a MinAtar frame: how
    many of its cells show an object), coloured by times replayed; the last batch ringed."""
    if memories is None or len(memories.drawn) == 0:
        return empty_figure(title)
    drawn = memories.drawn
    values, label = surprise_measure(memories)
    names = list(memories.pose_names)
    order = [names.index("pole angle"), names.index("cart position")] if len(names) == 2 else [0]
    coordinates = drawn.poses
    if len(names) == FRAME_CELLS:  # a frame's cells one by one mean little: count the busy ones
        names, coordinates = ["cells showing an object"], (drawn.poses > 0).sum(axis=1)[:, None]
    batch = memories.lists.get("last batch")
    in_batch = np.isin(drawn.slots, batch.slots) if batch else np.zeros(len(drawn), bool)
    customdata = np.column_stack([drawn.slots, drawn.replayed, drawn.ages, drawn.probabilities])
    traces: list[dict[str, Any]] = []
    layout_axes: dict[str, Any] = {}
    width = 1.0 / len(order)
    for panel, column in enumerate(order):
        suffix = "" if panel == 0 else str(panel + 1)
        traces.append(
            {
                "type": "scattergl",
                "x": coordinates[:, column],
                "y": values,
                "xaxis": f"x{suffix}",
                "yaxis": f"y{suffix}",
                "mode": "markers",
                "name": names[column],
                "customdata": customdata,
                "marker": {
                    "size": 7,
                    "color": drawn.replayed,
                    "colorscale": _COLOR_SCALE,
                    "showscale": panel == len(order) - 1,
                    "colorbar": {"title": {"text": "times replayed"}, "thickness": 12},
                    "line": {"width": np.where(in_batch, 2.0, 0.0), "color": "#d62728"},
                    "opacity": 0.8,
                },
                "hovertemplate": "slot %{customdata[0]:.0f}<br>"
                f"{names[column]} %{{x:.3g}}<br>{label} %{{y:.3g}}<br>"
                "replayed %{customdata[1]:.0f}× · age %{customdata[2]:.0f}<br>"
                "P(i) %{customdata[3]:.3g}<extra></extra>",
            }
        )
        low, high = panel * width + (0.06 if panel else 0.0), (panel + 1) * width - 0.04
        layout_axes[f"xaxis{suffix}"] = {
            "domain": [low, high],
            "title": {"text": names[column] + (" (rad)" if names[column] == "pole angle" else "")},
            "anchor": f"y{suffix}",
        }
        layout_axes[f"yaxis{suffix}"] = {
            **_log_axis(values[np.isfinite(values)]),
            "anchor": f"x{suffix}",
            **({"title": {"text": label}} if panel == 0 else {"matches": "y"}),
        }
    layout = _style(title=title, **layout_axes)
    return go.Figure(data=traces, layout=layout)


def replays_by_age_figure(
    memories: Memories | None, *, title: str = "Times replayed, by age"
) -> go.Figure:
    """Times each drawn memory was replayed against its age in writes (0: the newest), and the
    line uniform replay would give on average (`rdqn.training.replay_expectation`)."""
    if memories is None or len(memories.drawn) == 0:
        return empty_figure(title)
    drawn = memories.drawn
    points = {  # SVG, not WebGL: a WebGL trace would be drawn over the expected line
        "type": "scatter",
        "x": drawn.ages,
        "y": drawn.replayed,
        "mode": "markers",
        "name": f"{memories.scheme} replay",
        "customdata": np.column_stack([drawn.slots, drawn.probabilities]),
        "marker": {"size": 6, "color": _scheme_color(memories.scheme), "opacity": 0.55},
        "hovertemplate": "slot %{customdata[0]:.0f}<br>age %{x:.0f}<br>"
        "replayed %{y:.0f}×<br>P(i) %{customdata[1]:.3g}<extra></extra>",
    }
    expected = {
        "type": "scatter",
        "x": memories.expected_ages,
        "y": memories.expected_replays,
        "mode": "lines",
        "name": "uniform replay, expected",
        "line": {"color": SCHEME_COLORS["uniform"], "width": 3, "dash": "dash"},
        "hovertemplate": "age %{x:.0f}<br>uniform: %{y:.2f}× expected<extra></extra>",
    }
    layout = _style(
        title=title,
        x_title="age (writes since stored; 0 = newest)",
        y_title="times replayed",
        legend=True,
        yaxis={"rangemode": "tozero"},
    )
    return go.Figure(data=[points, expected], layout=layout)


def sequence_steps_figure(rows: SequenceRows, *, title: str, height: int = 380) -> go.Figure:
    """Sequence replay's memories (`rdqn.training.memories`): one row per stored sequence of
    ``rows`` (its slot on the y axis), one column per step t, coloured by |δ_t| by the current
    networks; the burn-in and the padding after a short sequence, which have no loss, are
    blank. The η-mixed |δ| and P(i) of each sequence are in its hover."""
    if not len(rows):
        return empty_figure(title)
    steps = rows.td_abs.shape[1]
    labels = [f"slot {slot:,}" for slot in rows.slots]
    mixed = np.repeat(rows.mixed[:, None], steps, axis=1)
    chance = np.repeat(rows.probabilities[:, None], steps, axis=1)
    trace = {
        "type": "heatmap",
        "z": rows.td_abs,
        "x": np.arange(steps),
        "y": labels,
        "customdata": np.stack([mixed, chance], axis=2),
        "colorscale": _COLOR_SCALE,
        "colorbar": {"title": {"text": "|δₜ| now"}},
        "hoverongaps": False,
        "xgap": 1,
        "ygap": 2,
        "hovertemplate": "%{y}, step %{x}<br>|δₜ| %{z:.4g}<br>sequence |δ| (η-mixed) "
        "%{customdata[0]:.4g} · P(i) %{customdata[1]:.3g}<extra></extra>",
    }
    layout = _style(
        title=title,
        x_title="step t of the sequence",
        y_title="",
        height=height,
        yaxis={"autorange": "reversed", "type": "category"},
    )
    return go.Figure(data=[trace], layout=layout)
