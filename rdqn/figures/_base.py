"""Shared look and small helpers of the figure builders: fonts, colours, margins, empty states."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike, NDArray
from plotly.colors import qualitative
from tsdownsample import NaNMinMaxLTTBDownsampler

EMPTY_MESSAGE = "no data yet"
BASE_FONT_SIZE = 15
SCHEME_COLORS: dict[str, str] = {"uniform": "#636efa", "proportional": "#ef553b", "rank": "#00a884"}
"""One colour per replay scheme, on every page and in the comparison report."""
NEUTRAL = "#5b6b8c"
"""Color for data that belongs to no replay scheme (timings, unknown schemes)."""
FAINT = "#9aa0a6"
EMPHASIS = "#d62728"
"""Highlighted paths when there are too many to give each its own color."""
HIGHLIGHT_FILL = "#ffd166"
SEGMENT_FILLS = ("#c6dbef", "#fdd0a2")
"""Alternating light fills for adjacent leaves in the mass bar."""
PATH_PALETTE = tuple(qualitative.Dark2)
MAX_TREE_LEAVES = 256
"""Beyond this a node-by-node drawing is unreadable: use `tree_levels_figure`."""
MAX_LABELS_PER_LEVEL = 16
"""Node labels are drawn on a tree level only when it has at most this many nodes."""
MAX_LABELLED_QUERIES = 16
MAX_LABELLED_SEGMENTS = 32
MAX_LABELLED_STRATA = 16
MIN_LABELLED_SHARE = 0.025
"""A leaf segment gets its index written in it only when it holds this share of the total."""

_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_MARGIN = {"l": 64, "r": 24, "t": 16, "b": 56}
"""Base margins; the title and the legend add their own height at the top (`_style`)."""
TITLE_PAD = 12
"""Pixels between the top of the figure and its title."""
CURVE_POINTS = 600
"""Samples drawn per curve at most (`thin`): a few per pixel of a chart's width."""
_MIN_MAX_LTTB = NaNMinMaxLTTBDownsampler()


# --------------------------------------------------------------------------- shared helpers


def ema(values: ArrayLike, smoothing: float) -> NDArray[np.float64]:
    """TensorBoard's debiased exponential moving average.

    s_t = smoothing * s_{t-1} + (1 - smoothing) * v_t with s_0 = 0, reported as
    s_t / (1 - smoothing^n_t) where n_t counts the finite values so far; the division removes
    the pull towards 0 of the zero start. `smoothing = 0` returns the values unchanged.
    A non-finite value is passed through and leaves the average untouched.

    [1, 2, 3] with smoothing 0.5 gives [1, 5/3, 17/7]. A live page redraws it every second,
    so the recurrence runs in blocks (`_linear_ema`), not one value at a time.
    """
    if not 0.0 <= smoothing < 1.0:
        raise ValueError(f"smoothing must be in [0, 1), got {smoothing}")
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    out = v.copy()
    finite = np.isfinite(v)
    count = int(finite.sum())
    if count and smoothing > 0:
        s = _linear_ema(v[finite], smoothing)
        out[finite] = s / -np.expm1(np.arange(1, count + 1) * math.log(smoothing))
    return out


_EMA_BLOCK = 16
"""Values per block of `_recurrence` (16: the fastest here; from 32 on, numpy's matrix product
starts threads that cost more than they save on a busy server)."""


def _linear_ema(v: NDArray[np.float64], a: float) -> NDArray[np.float64]:
    """s_t = a * s_{t-1} + (1 - a) * v_t from s_{-1} = 0 (numpy only: scipy's linear filter
    would cost the web server 60 MB of memory to import)."""
    return _recurrence((1.0 - a) * v, a)


def _recurrence(x: NDArray[np.float64], a: float) -> NDArray[np.float64]:
    """s_t = a * s_{t-1} + x_t from s_{-1} = 0, in blocks of L = `_EMA_BLOCK` values.

    Within block b, s_{bL+k} = sum_{j<=k} a^{k-j} x_{bL+j} + a^{k+1} c_{b-1}: a product with the
    lower-triangular matrix of the powers a^{k-j} for all blocks at once, plus the carry
    c_b = s_{bL+L-1}, which is the same recurrence over the blocks' last partial sums with
    a^L for a (solved the same way, on L times fewer values).
    """
    n = x.size
    k = np.arange(_EMA_BLOCK)
    gaps = k[:, None] - k[None, :]
    powers = np.where(gaps >= 0, a ** np.maximum(gaps, 0), 0.0)  # [k, j] = a^(k-j), j <= k
    blocks = np.concatenate([x, np.zeros(-n % _EMA_BLOCK)]).reshape(-1, _EMA_BLOCK)
    out = blocks @ powers.T
    if len(out) > 1:
        carries = _recurrence(out[:, -1], a**_EMA_BLOCK)
        out[1:] += np.outer(carries[:-1], a ** (k + 1))
    return out.reshape(-1)[:n]


def thin(
    x: NDArray[np.float64], y: NDArray[np.float64], points: int = CURVE_POINTS
) -> NDArray[np.intp]:
    """Indices of at most ``points`` samples of the curve (x, y) that draw like all of it.

    MinMaxLTTB (`tsdownsample`): each of ``points`` buckets along x keeps the sample that best
    preserves the curve's shape, with every bucket's minimum and maximum as candidates, so a
    single spike still shows. A live chart is redrawn every second: SVG cost grows
    with the samples, not with the pixels. ``x`` must not decrease; fewer samples than
    ``points`` (or a decreasing ``x``) come back whole.
    """
    n = y.size
    if n <= points or np.any(np.diff(x) < 0):
        return np.arange(n)
    return _MIN_MAX_LTTB.downsample(x, y, n_out=points).astype(np.intp)


def _line(x: NDArray[Any], y: NDArray[np.float64], **trace: Any) -> dict[str, Any]:
    """A line trace of the samples of the curve (x, y) a chart draws (`thin`); ``trace`` gives
    its name, line, hovertemplate and any other keys (a ``mode`` replaces "lines")."""
    keep = thin(np.asarray(x, dtype=np.float64), y)
    return {"type": "scatter", "x": x[keep], "y": y[keep], "mode": "lines", **trace}


def empty_figure(title: str = "", message: str = EMPTY_MESSAGE) -> go.Figure:
    """A styled figure with no axes and a centred `message`: the state before data arrives."""
    annotation = {
        "text": message,
        "x": 0.5,
        "y": 0.5,
        "xref": "paper",
        "yref": "paper",
        "showarrow": False,
        "font": {"size": BASE_FONT_SIZE + 5, "color": FAINT},
    }
    layout = _style(
        title=title, xaxis={"visible": False}, yaxis={"visible": False}, annotations=[annotation]
    )
    return go.Figure(layout=layout)


def _style(
    *,
    title: str,
    x_title: str | None = None,
    y_title: str | None = None,
    legend: bool = False,
    height: int | None = None,
    xaxis: dict[str, Any] | None = None,
    yaxis: dict[str, Any] | None = None,
    **layout: Any,
) -> dict[str, Any]:
    """The layout shared by every figure: fonts, compact margins, legend under the title.

    Title and legend never overlap, however narrow the column: the title sits at the top of the
    figure and reserves its own height (`automargin` in container coordinates), and the
    horizontal legend sits on top of the plot area, left-aligned, pushing the plot down by the
    rows it needs when it wraps; plotly adds the two heights.

    Returns a layout dict for `go.Figure(data=[trace dicts], layout=...)`. `xaxis`, `yaxis` and
    any other `layout` keys (shapes, annotations, bargap, yaxis2, ...) are the figure's own
    settings; a `margin` dict overrides single sides of the shared margins; `x_title` and
    `y_title` become the axes' titles. Building a figure in one constructor call validates
    everything once: plotly's `add_*`/`update_*` calls each re-validate, several times slower,
    and the figures are rebuilt every second beside training.
    """
    margin = {**_MARGIN, **layout.pop("margin", {})}
    style: dict[str, Any] = {
        **layout,
        "font": {"size": BASE_FONT_SIZE},
        "title": {
            "text": title,
            "x": 0.01,
            "xanchor": "left",
            "yref": "container",
            "y": 1.0,
            "yanchor": "top",
            "pad": {"t": TITLE_PAD, "b": 4},
            "automargin": True,
            "font": {"size": BASE_FONT_SIZE + 4},
        },
        "margin": margin,
        "showlegend": legend,
        "legend": {
            "orientation": "h",
            "x": 0.0,
            "xanchor": "left",
            "y": 1.0,
            "yanchor": "bottom",
            "bgcolor": "rgba(255,255,255,0)",
        },
        "hoverlabel": {"font": {"size": BASE_FONT_SIZE}},
    }
    if x_title is not None:
        xaxis = {**(xaxis or {}), "title": {"text": x_title}}
    if y_title is not None:
        yaxis = {**(yaxis or {}), "title": {"text": y_title}}
    if xaxis is not None:
        style["xaxis"] = xaxis
    if yaxis is not None:
        style["yaxis"] = yaxis
    if height is not None:
        style["height"] = height
    return style


def _scheme_color(scheme: str | None) -> str:
    return SCHEME_COLORS.get(scheme, NEUTRAL) if scheme is not None else NEUTRAL


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _compact(value: float) -> str:
    """Three significant digits, with k/M suffixes so large sums stay short: 12345 -> '12.3k'."""
    if not math.isfinite(value):
        return str(value)
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:.3g}M"
    if magnitude >= 1e3:
        return f"{value / 1e3:.3g}k"
    return f"{value:.3g}"


def _power_of_ten_label(k: int) -> str:
    """10^k written out while short: -2 -> '0.01', 3 -> '1000', -6 -> '10⁻⁶'."""
    if k < -3 or k > 4:
        return "10" + str(k).translate(_SUPERSCRIPTS)
    return f"{10.0**k:.{-k}f}" if k < 0 else f"{10**k:d}"


def _log_ticks(low: float, high: float) -> tuple[list[int], list[str]]:
    """Integer exponents in [low, high] and their 10^k labels, for axes holding log10 values."""
    exponents = list(range(math.ceil(low), math.floor(high) + 1))
    return exponents, [_power_of_ten_label(k) for k in exponents]


def _power_ticks(edges: NDArray[np.float64]) -> dict[str, Any]:
    """Axis settings for an axis holding log10 values from ``edges[0]`` to ``edges[-1]`` (a
    histogram's bin edges): ticks at the integer exponents, labelled 10^k (`_log_ticks`)."""
    tickvals, ticktext = _log_ticks(float(edges[0]), float(edges[-1]))
    return {"tickmode": "array", "tickvals": tickvals, "ticktext": ticktext}


def _log_axis(values: NDArray[np.float64]) -> dict[str, Any]:
    """Axis settings for a log axis over `values`: one labelled tick per decade when they span
    at least one (plotly's default labels every digit in small type), else plotly's choice."""
    positive = values[np.isfinite(values) & (values > 0)]
    settings: dict[str, Any] = {"type": "log"}
    if positive.size and np.log10(positive.max() / positive.min()) >= 1.0:
        low, high = np.log10(positive.min()), np.log10(positive.max())
        exponents, labels = _log_ticks(math.floor(low), math.ceil(high))
        settings.update(tickmode="array", tickvals=[10.0**k for k in exponents], ticktext=labels)
    return settings


def _as_1d(values: ArrayLike) -> NDArray[np.float64]:
    return np.asarray(values, dtype=np.float64).reshape(-1)


def _same_length(**arrays: ArrayLike) -> list[NDArray[np.float64]]:
    """The arrays flattened (`_as_1d`), in order; a `ValueError` naming each one's length
    unless they all have the same."""
    flat = {name: _as_1d(a) for name, a in arrays.items()}
    sizes = {name: a.shape[0] for name, a in flat.items()}
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{name}={size}" for name, size in sizes.items())
        raise ValueError(f"arrays must have the same length, got {listed}")
    return list(flat.values())


# --------------------------------------------------------------------------- learning curves


def _hline(y: float, text: str, *, below: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """(shape, annotation) of a dotted horizontal line across the plot at `y`, labelled at the
    right end above it (below with `below`): what `fig.add_hline(..., annotation_position="top
    right" or "bottom right")` adds, as plain dicts for the layout's shapes and annotations."""
    return _dotted_line("y", y, text, xanchor="right", yanchor="top" if below else "bottom")


def _vline(x: float, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(shape, annotation) of a dotted vertical line at `x` labelled at its top right: what
    `fig.add_vline(..., annotation_position="top right")` adds."""
    return _dotted_line("x", x, text, xanchor="left", yanchor="top")


def _dotted_line(
    axis: str, at: float, text: str, **anchors: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """`_hline` (`axis` "y") or `_vline` (`axis` "x"): the line at `at` on `axis` spans the
    other axis' domain, and its label sits at the far end of that span."""
    across = "x" if axis == "y" else "y"
    ends = {f"{axis}0": at, f"{axis}1": at, f"{across}0": 0, f"{across}1": 1}
    refs = {f"{axis}ref": axis, f"{across}ref": f"{across} domain"}
    shape = {"type": "line", **ends, **refs, "line": {"dash": "dot", "color": "#444", "width": 2}}
    annotation = {
        "text": text,
        axis: at,
        across: 1,
        **refs,
        **anchors,
        "showarrow": False,
        "font": {"size": BASE_FONT_SIZE - 2, "color": "#444"},
    }
    return shape, annotation


def _threshold_line(threshold: float) -> dict[str, list[dict[str, Any]]]:
    """Layout keys (shapes, annotations) of the dotted threshold line, labelled below its end."""
    shape, annotation = _hline(threshold, f"threshold {threshold:g}", below=True)
    return {"shapes": [shape], "annotations": [annotation]}
