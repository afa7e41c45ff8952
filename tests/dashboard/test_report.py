"""Tests for dashboard.figures.report: the comparison report is one self-contained HTML page."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from dashboard.figures.report import comparison_report, write_comparison_report
from rdqn.compare import Curve, summary_table

A = Curve(np.array([10, 25, 40]), np.array([1.0, 3.0, 5.0]))
B = Curve(np.array([5, 30]), np.array([10.0, 0.0]))
EMPTY = Curve(np.zeros(0, dtype=np.int64), np.zeros(0))


def test_report_is_self_contained_utf8_html(tmp_path: Path) -> None:
    runs = {"uniform": [A, B], "rank": [A]}
    heading = "CartPole — uniform vs rank <Δ & ü>"
    page = comparison_report(
        runs, summary_table(runs, 3.0, window=2), heading=heading, total_steps=40, window=2
    )
    target = tmp_path / "nested" / "dir" / "report.html"
    assert write_comparison_report(target, page) == target
    written = target.read_bytes().decode("utf-8")
    assert written == page
    assert page.startswith("<!doctype html>")
    assert '<meta charset="utf-8">' in page
    assert f"<title>{html.escape(heading)}</title>" in page
    assert f"<h1>{html.escape(heading)}</h1>" in page
    assert "<Δ & ü>" not in page
    assert 'id="curves"' in page and "Plotly.newPlot" in page
    assert '<script src="http' not in page  # plotly.js is inlined: the page opens offline
    assert len(page) > 1_000_000
    assert '"uniform (2 seeds)"' in page and '"rank (1 seed)"' in page
    assert "<td>uniform</td>" in page and "reached threshold" in page


def test_report_table_shows_missing_values_as_dash() -> None:
    runs = {"uniform": [EMPTY]}
    page = comparison_report(runs, summary_table(runs, 1.0), heading="h", total_steps=10)
    table = page[page.index("<table") : page.index("</table>")]
    assert "<td>-</td>" in table
    assert "nan" not in table.lower()
    assert "0/1" in table
