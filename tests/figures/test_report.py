"""Tests for rdqn.figures.report: the comparison report is one self-contained HTML page."""

from __future__ import annotations

import html

import numpy as np
import pytest
import scipy.stats

from rdqn.compare import Curve, comparison_configs, summary_table
from rdqn.figures import SCHEME_COLORS
from rdqn.figures.report import comparison_report
from rdqn.presets import preset
from rdqn.stats import BOOTSTRAP_SEED, RESAMPLES
from rdqn.training.evaluation import Evaluations
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


def test_report_draws_the_runs_greedy_evaluations_when_they_made_any() -> None:
    """uniform's two seeds evaluated R̄ 2 and 6 at step 20: the report's line is at 4."""
    runs = {"uniform": [A, B]}
    table = summary_table(runs, 3.0, window=2)
    one = Evaluations(np.array([20]), np.array([[1.0, 3.0]]), np.ones((1, 2), np.int64))
    other = Evaluations(np.array([20]), np.array([[6.0, 6.0]]), np.ones((1, 2), np.int64))
    page = comparison_report(
        runs, table, heading="h", total_steps=40, window=2, evaluations={"uniform": [one, other]}
    )
    figure = figure_in_page(page, "evaluations")
    assert "uniform (2 seeds)" in trace_names(figure)
    none = {"uniform": [Evaluations.none(2)]}
    page = comparison_report(runs, table, heading="h", total_steps=40, window=2, evaluations=none)
    assert 'id="evaluations"' not in page


def test_report_table_rounds_each_column_alike() -> None:
    goal = Curve(np.array([10, 20, 30]), np.array([0.0, 1.0, 1.0]))  # rolling (2): 0, .5, 1
    other = Curve(np.array([10, 30, 40]), np.array([1.0, 3.0, 5.0]))  # rolling (2): 1, 2, 4
    runs = {"proportional": [goal, other]}
    page = comparison_report(
        runs, summary_table(runs, 0.5, window=2), heading="h", total_steps=40, window=2
    )
    table = page[page.index("<table") : page.index("</table>")]
    cells = [c.split("</td>")[0] for c in table.split("<td>")[1:]]
    # seeds; final mean (1 + 4) / 2 and min 1, both with 2 decimals (every return is below 10),
    # and their IQM (two seeds: the mean) with its interval; reached; episodes and steps to 0.5
    # ((2 + 2) / 2, (20 + 30) / 2) as whole numbers, and the steps' IQM with its interval
    assert cells[1:] == ["2", "2.50", "1.00", "2.50 [1.00–4.00]", "2/2", "2", "25", "25 [20–30]"]


def test_report_table_shows_missing_values_as_dash() -> None:
    runs = {"uniform": [EMPTY]}
    page = comparison_report(runs, summary_table(runs, 1.0), heading="h", total_steps=10)
    table = page[page.index("<table") : page.index("</table>")]
    assert "<td>-</td>" in table
    assert "nan" not in table.lower()
    assert "0/1" in table


def finals(values: list[float]) -> list[Curve]:
    """One seed per value, each a single episode of that return (its final return, window 1)."""
    return [Curve(np.array([10]), np.array([v])) for v in values]


def table_cells(page: str) -> list[list[str]]:
    body = page[page.index("<tbody>") : page.index("</tbody>")]
    rows = body.split("<tr>")[1:]
    return [[c.split("</td>")[0] for c in row.split("<td>")[1:]] for row in rows]


def numpy_iqm_interval(values: list[float]) -> tuple[float, float]:
    """The 95 % stratified bootstrap interval of the IQM computed directly: 2,000 resamples of
    the seeds with replacement from a generator seeded as `rdqn.stats` seeds it, scipy's
    trim_mean(0.25) of each, their 2.5 % and 97.5 % quantiles."""
    scores = np.asarray(values)
    picks = np.random.default_rng(BOOTSTRAP_SEED).integers(
        0, scores.size, size=(RESAMPLES, scores.size, 1)
    )
    iqms = scipy.stats.trim_mean(scores[picks[:, :, 0]], 0.25, axis=1)
    low, high = np.quantile(iqms, [0.025, 0.975])
    return float(low), float(high)


def test_report_table_gives_the_iqm_its_interval_and_the_chance_of_beating_uniform() -> None:
    """Five seeds a scheme: the IQM cuts one seed from each end and averages the middle three,
    uniform (1, 2, 3, 4, 9.5) -> (2 + 3 + 4) / 3 = 3, rank (2, 4, 6, 8, 9) -> (4 + 6 + 8) / 3
    = 6. P(rank > uniform) over the 25 pairs: rank's 2 beats 1 and ties 2 (1.5), 4 beats three
    and ties one (3.5), 6, 8 and 9 beat four each (12): 17 / 25 = 0.68."""
    uniform, rank = [1.0, 2.0, 3.0, 4.0, 9.5], [2.0, 4.0, 6.0, 8.0, 9.0]
    runs = {"uniform": finals(uniform), "rank": finals(rank)}
    table = summary_table(runs, None, window=1)
    rows = {row["scheme"]: row for row in table.to_dict("records")}
    for scheme, values, iqm in (("uniform", uniform, 3.0), ("rank", rank, 6.0)):
        row = rows[scheme]
        low, high = numpy_iqm_interval(values)
        assert row["final return (IQM)"] == pytest.approx(iqm)
        assert (row["final return (IQM) low"], row["final return (IQM) high"]) == pytest.approx(
            (low, high)
        )
        assert low < iqm < high
    assert rows["rank"]["P(final return > uniform)"] == pytest.approx(0.68)
    assert rows["rank"]["P(final return > uniform) low"] < 0.68
    assert 0.68 < rows["rank"]["P(final return > uniform) high"] <= 1.0

    page = comparison_report(runs, table, heading="h", total_steps=10, window=1)
    head = page[page.index("<table") : page.index("</thead>")]
    assert "final return (IQM) [95% CI]" in head
    assert "P(final return &gt; uniform) [95% CI]" in head
    (u, r) = table_cells(page)
    low, high = numpy_iqm_interval(uniform)
    assert u[4:6] == [f"3.00 [{low:.2f}–{high:.2f}]", "-"]
    low, high = numpy_iqm_interval(rank)
    chance = (rows["rank"][f"P(final return > uniform) {end}"] for end in ("low", "high"))
    assert r[4:6] == [f"6.00 [{low:.2f}–{high:.2f}]", "0.68 [{:.2f}–{:.2f}]".format(*chance)]
    assert "interquartile mean" in page and "Agarwal et al. 2021" in page
