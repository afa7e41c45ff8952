"""The comparison report: one self-contained HTML page (figure and table) that opens offline.

Written by ``python -m rdqn compare --report FILE``. The figure is `comparison_figure`, the same
one the Compare schemes page shows, with plotly.js inlined so the file needs no network. Schemes
are named as on the page (scheme, α, β₀ from the runs' `configs`) and coloured as on every page
(`SCHEME_COLORS`); the table's numbers have the page's decimals (`summary_decimals`), each IQM
and probability of improvement with its 95 % interval in one cell (`shown_intervals`), and a
note under it says what they are (`summary_note`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import pandas as pd

from rdqn.compare import (
    ROLLING_WINDOW,
    Curve,
    scheme_label,
    shown_intervals,
    summary_decimals,
    summary_note,
)
from rdqn.config import RunConfig
from rdqn.figures._base import SCHEME_COLORS
from rdqn.figures.curves import comparison_figure
from rdqn.figures.evaluations import evaluation_figure
from rdqn.training.evaluation import Evaluations

__all__ = ["comparison_report"]

_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;max-width:1100px}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
    "td span{white-space:nowrap}p{max-width:60rem}"
)


def comparison_report(
    runs: Mapping[str, Sequence[Curve]],
    table: pd.DataFrame,
    *,
    heading: str,
    total_steps: int,
    threshold: float | None = None,
    window: int = ROLLING_WINDOW,
    configs: Sequence[RunConfig] = (),
    evaluations: Mapping[str, Sequence[Evaluations]] | None = None,
) -> str:
    """The report page: heading, learning curves per scheme, the summary table, and the greedy
    evaluations per scheme (`evaluation_figure`) when the runs made any.

    `runs` and `table` (`rdqn.compare.summary_table`) are keyed by scheme; the comparison's
    `configs` name each scheme with its α and β₀ (`rdqn.compare.scheme_label`) in the
    legend and the table (without them, by the scheme alone) and mark where learning starts.
    """
    labels = {config.replay.scheme: scheme_label(config) for config in configs}
    warm_up = max((config.train.learning_starts for config in configs), default=None)
    figure = comparison_figure(
        runs,
        total_steps=total_steps,
        threshold=threshold,
        window=window,
        labels=labels,
        warm_up=warm_up,
    ).update_layout(height=520)
    chart = figure.to_html(full_html=False, include_plotlyjs=True, div_id="curves")
    if evaluations and any(len(run) for group in evaluations.values() for run in group):
        drawn = evaluation_figure(evaluations, labels=labels, threshold=threshold)
        chart += drawn.update_layout(height=420).to_html(
            full_html=False, include_plotlyjs=False, div_id="evaluations"
        )
    rows = _table_html(table, labels)
    title = html.escape(heading)
    return (
        f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{_STYLE}</style></head>\n<body><h1>{title}</h1>\n{chart}\n{rows}\n"
        f"<p>{html.escape(summary_note(table))}</p>\n</body></html>\n"
    )


def _table_html(table: pd.DataFrame, labels: Mapping[str, str]) -> str:
    """The summary table with the page's decimals per column, each interval beside its
    estimate, each scheme named by its label in its colour, missing values as '-'."""
    shown = shown_intervals(table)
    formatters = {
        html.escape(name): (lambda v, d=decimals: "-" if pd.isna(v) else f"{v:,.{d}f}")
        for name, decimals in summary_decimals(table).items()
        if name in shown.columns
    }
    if "scheme" in shown.columns:
        shown["scheme"] = [
            f'<span style="color:{SCHEME_COLORS.get(s, "inherit")}">'
            f"{html.escape(labels.get(s, s))}</span>"
            for s in table["scheme"]
        ]
    shown.columns = [html.escape(str(name)) for name in shown.columns]
    return shown.to_html(index=False, formatters=formatters, na_rep="-", escape=False)
