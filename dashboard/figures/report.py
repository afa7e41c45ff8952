"""The comparison report: one self-contained HTML page (figure and table) that opens offline.

Written by ``python -m rdqn compare --report FILE``. The figure is `comparison_figure`, the same
one the Compare schemes page shows, with plotly.js inlined so the file needs no network.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from dashboard.figures.curves import comparison_figure
from rdqn.compare import ROLLING_WINDOW, Curve

__all__ = ["comparison_report", "write_comparison_report"]

_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;max-width:1100px}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
)


def comparison_report(
    runs: Mapping[str, Sequence[Curve]],
    table: pd.DataFrame,
    *,
    heading: str,
    total_steps: int,
    threshold: float | None = None,
    window: int = ROLLING_WINDOW,
) -> str:
    """The report page: heading, learning curves per scheme, and the summary table."""
    figure = comparison_figure(
        runs, total_steps=total_steps, threshold=threshold, window=window
    ).update_layout(height=520)
    chart = figure.to_html(full_html=False, include_plotlyjs=True, div_id="curves")
    rows = table.to_html(index=False, float_format=lambda v: f"{v:,.1f}", na_rep="-")
    title = html.escape(heading)
    return (
        f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{_STYLE}</style></head>\n<body><h1>{title}</h1>\n{chart}\n{rows}\n</body></html>\n"
    )


def write_comparison_report(path: str | Path, report: str) -> Path:
    """Write a report page to ``path`` (folders created as needed); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report, encoding="utf-8")
    return path
