"""Tests for rdqn.figures.report: the comparison report is one self-contained HTML page."""

from __future__ import annotations

import html

import numpy as np

from rdqn.compare import Curve, comparison_configs, summary_table
from rdqn.figures import SCHEME_COLORS
from rdqn.figures.report import comparison_report
from rdqn.presets import preset
from tests.report_helpers import annotation_texts, figure_in_page, trace_names

A = Curve(np.array([10, 25, 40]), np.array([1.0, 3.0, 5.0]))
B = Curve(np.array([5, 30]), np.array([10.0, 0.0]))
EMPTY = Curve(np.zeros(0, dtype=np.int64), np.zeros(0))


def test_report_is_self_contained_utf8_html() -> None:
    runs = {"uniform": [A, B], "rank": [A]}
    heading = "CartPole — uniform vs rank <Δ & ü>"
    page = comparison_report(
        runs, summary_table(runs, 3.0, window=2), heading=heading, total_steps=40, window=2
    )
    assert page.startswith("<!doctype html>")
    assert '<meta charset="utf-8">' in page
    assert f"<title>{html.escape(heading)}</title>" in page
    assert f"<h1>{html.escape(heading)}</h1>" in page
    assert "<Δ & ü>" not in page
    assert 'id="curves"' in page and "Plotly.newPlot" in page
    assert '<script src="http' not in page  # plotly.js is inlined: the page opens offline
    assert len(page) > 1_000_000
    assert {"uniform (2 seeds)", "rank (1 seed)"} <= trace_names(figure_in_page(page, "curves"))
    assert '<span style="color:#636efa">uniform</span>' in page and "reached threshold" in page


def test_report_names_schemes_by_alpha_and_beta_in_their_colours() -> None:
    base = preset("paper")
    configs = comparison_configs(base, ["uniform", "rank"], [0, 1])
    runs = {"uniform": [A, B], "rank": [A, B]}
    page = comparison_report(
        runs,
        summary_table(runs, 3.0, window=2),
        heading="h",
        total_steps=40,
        window=2,
        configs=configs,
    )
    figure = figure_in_page(page, "curves")
    assert "rank · α 0.7 · β₀ 0.5 (2 seeds)" in trace_names(figure)  # the legend
    assert "learning starts" in annotation_texts(figure)
    rank = SCHEME_COLORS["rank"]
    assert f'<td><span style="color:{rank}">rank · α 0.7 · β₀ 0.5</span></td>' in page


def test_report_table_rounds_each_column_alike() -> None:
    goal = Curve(np.array([10, 20, 30]), np.array([0.0, 1.0, 1.0]))  # rolling (2): 0, .5, 1
    other = Curve(np.array([10, 30, 40]), np.array([1.0, 3.0, 5.0]))  # rolling (2): 1, 2, 4
    runs = {"proportional": [goal, other]}
    page = comparison_report(
        runs, summary_table(runs, 0.5, window=2), heading="h", total_steps=40, window=2
    )
    table = page[page.index("<table") : page.index("</table>")]
    cells = [c.split("</td>")[0] for c in table.split("<td>")[1:]]
    # seeds; final mean (1 + 4) / 2 and min 1, both with 2 decimals (every return is below 10);
    # reached; episodes and steps to 0.5 ((2 + 2) / 2, (20 + 30) / 2) as whole numbers
    assert cells[1:] == ["2", "2.50", "1.00", "2/2", "2", "25"]


def test_report_table_shows_missing_values_as_dash() -> None:
    runs = {"uniform": [EMPTY]}
    page = comparison_report(runs, summary_table(runs, 1.0), heading="h", total_steps=10)
    table = page[page.index("<table") : page.index("</table>")]
    assert "<td>-</td>" in table
    assert "nan" not in table.lower()
    assert "0/1" in table
