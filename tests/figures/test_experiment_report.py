"""The PER notebook study's report (rdqn.figures.experiment_report) on a tiny run: one
self-contained offline page with the summary and every figure."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

from rdqn.experiments.per_notebook import (
    per_notebook_summary,
    per_notebook_trials,
    run_per_notebook_trial,
)
from rdqn.figures.experiment_report import per_notebook_figures, per_notebook_report

pytestmark = pytest.mark.slow  # trains CartPole for seconds


@pytest.fixture(scope="module")
def report() -> dict:
    """A results file as the CLI writes it (JSON round trip): both schemes, seed 0, 600
    steps, 3 probes."""
    trials = per_notebook_trials(["uniform", "proportional"], [0], steps=600, probes=3)
    results = [run_per_notebook_trial(t) for t in trials]
    report = {
        "what": "the PER notebook's study",
        "command": "python -m rdqn experiment per-notebook --steps 600",
        "threshold": 475.0,
        "config": trials[0].config,
        "summary": per_notebook_summary(results),
        "failed": [],
        "trials": results,
    }
    return json.loads(json.dumps(report))


def values(array: list | dict) -> np.ndarray:
    """A figure's array as JSON holds it: a list, or Plotly's typed array (base64 "bdata")."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
    return np.asarray(array)


def plotted(page: str) -> dict[str, dict]:
    """The figures drawn on the page, by div id (data and layout, decoded)."""
    decoder = json.JSONDecoder()
    figures = {}
    for match in re.finditer(r'Plotly\.newPlot\(\s*"([\w-]+)",\s*', page):
        data, end = decoder.raw_decode(page, match.end())
        layout, _ = decoder.raw_decode(page, re.match(r",\s*", page[end:]).end() + end)
        figures[match.group(1)] = {"data": data, "layout": layout}
    return figures


def test_report_is_one_offline_page_with_every_figure(report: dict) -> None:
    page = per_notebook_report(report)
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert '<script src="http' not in page  # plotly.js inlined: opens offline
    assert page.count("plotly.js v") == 1  # inlined once, not per figure
    figures = plotted(page)
    names = {name.replace("_", "-") for name in per_notebook_figures(report)}
    assert set(figures) == names
    curves = figures["per-notebook-rewards"]
    assert {"uniform, 1 seed", "proportional (α 0.6, β₀ 0.4 → 1), 1 seed"} <= {
        trace.get("name") for trace in curves["data"]
    }
    heat = figures["per-notebook-priorities"]["data"][0]
    assert len(values(heat["x"])) == 3  # one column per probe
    # one seed a scheme: each IQM is that seed's number, its interval without width
    final = report["summary"][0]["final_mean20"][0]
    assert f"<td>{final:,.0f} [{final:,.0f}–{final:,.0f}]</td>" in page
    assert page.count("<th>IQM [95% CI]</th>") == 3 and "Agarwal et al. 2021" in page


def test_report_distributions_show_median_and_spread_over_seeds(report: dict) -> None:
    """The report draws the same figures as the docs' PNGs (`per_notebook_figures`): every
    distribution is the median over the seeds with their spread, never the seeds pooled."""
    figures = plotted(per_notebook_report(report))
    for name in ("per-notebook-sampled-td", "per-notebook-weights"):
        layout = figures[name]["layout"]
        assert "median over 1 seed of" in layout["title"]["subtitle"]["text"]
        assert any(t.get("fill") == "toself" for t in figures[name]["data"])  # the seeds' range
    for name in ("per-notebook-priorities", "per-notebook-buffer-td-proportional"):
        median, spread = figures[name]["data"]
        assert (median["name"], spread["name"]) == ("median", "spread")
        assert spread["xaxis"] == "x2" and median["coloraxis"] == spread["coloraxis"]
        labels = [a["text"] for a in figures[name]["layout"]["annotations"]]
        assert labels[0] == "<b>median of 1 seed</b>"


def test_report_table_and_words(report: dict) -> None:
    page = per_notebook_report(report)
    assert "<th>reached 475</th>" in page and "<td>uniform</td>" in page
    assert "600 env steps per run, seeds 0" in page
    assert "python -m rdqn experiment per-notebook --steps 600" in page
