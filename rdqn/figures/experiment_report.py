"""The PER notebook study's report: one self-contained HTML page that opens offline.

Written by ``python -m rdqn experiment per-notebook --report FILE`` from the study's results file:
a summary table (seeds reaching the threshold, env steps to it, best and final 20-episode means,
each as a median with its range and as an IQM with its 95 % interval, `rdqn.experiments.tables`'
`iqm_cell`; how much larger the sampled batches' |TD error| is than the buffer's) and the figures of
`rdqn.figures.experiments` and `rdqn.figures.seed_histograms` (the PER notebook's sections
9-10): smoothed reward curves with bands, the mean |TD error| in the buffer and in the sampled
batches over time, histograms of the sampled |TD errors|, N * P(i) and IS weights at four stages
of training, and the buffer's priority and |TD error| distributions over time; every one the
median over the seeds with their spread, never the seeds pooled. The docs' PNGs
(``python -m benchmarks.experiment_figures``) are screenshots of these same figures. plotly.js
is inlined once, at the first figure.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from rdqn.experiments.tables import IQM_NOTE, iqm_cell
from rdqn.figures.experiments import buffer_td_figure, reward_bands_figure
from rdqn.figures.seed_histograms import probe_heatmap, stage_histograms_figure

__all__ = ["per_notebook_figures", "per_notebook_report"]

_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;max-width:1200px}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
    "th{background:#f4f4f4}p{max-width:60rem}"
)


def per_notebook_figures(report: Mapping[str, Any]) -> dict[str, go.Figure]:
    """The study's figures by name (the names of the PNGs in docs/figures/)."""
    trials = report["trials"]
    prioritized = [t for t in trials if t["scheme"] != "uniform"]
    return {
        "per_notebook_rewards": reward_bands_figure(trials, threshold=report.get("threshold")),
        "per_notebook_td": buffer_td_figure(trials),
        "per_notebook_sampled_td": stage_histograms_figure(
            trials,
            "sampled_td_hist",
            "log10_td",
            title="|TD error| of the sampled transitions, by stage of training",
        ),
        "per_notebook_sampled_probability": stage_histograms_figure(
            prioritized,
            "sampled_rel_prob_hist",
            "log10_rel_prob",
            title="N·P(i) of the sampled transitions (1 = uniform), by stage",
        ),
        "per_notebook_weights": stage_histograms_figure(
            prioritized,
            "sampled_weight_hist",
            "log10_weight",
            title="IS weights of the sampled transitions, by stage",
        ),
        "per_notebook_priorities": probe_heatmap(
            prioritized,
            "buffer_rel_prob_hist",
            "log10_rel_prob",
            title="The buffer's priority distribution over time: N·P(i), proportional",
            y_title="N·P(i)",
        ),
        "per_notebook_buffer_td_uniform": probe_heatmap(
            [t for t in trials if t["scheme"] == "uniform"],
            "buffer_td_hist",
            "log10_td",
            title="|TD error| over the buffer over time: uniform",
            y_title="|TD error|",
        ),
        "per_notebook_buffer_td_proportional": probe_heatmap(
            prioritized,
            "buffer_td_hist",
            "log10_td",
            title="|TD error| over the buffer over time: proportional",
            y_title="|TD error|",
        ),
    }


def per_notebook_report(report: Mapping[str, Any]) -> str:
    """The report page of the module docstring for a parsed results file."""
    title = "The PER notebook's study: uniform vs proportional replay on CartPole-v1"
    figures = per_notebook_figures(report)
    charts = [
        figure.to_html(full_html=False, include_plotlyjs=k == 0, div_id=name.replace("_", "-"))
        for k, (name, figure) in enumerate(figures.items())
    ]
    config = report.get("config", {})
    steps = config.get("train", {}).get("total_steps")
    seeds = sorted({t["seed"] for t in report["trials"]})
    intro = (
        f"{html.escape(report.get('what', ''))}. {steps:,} env steps per run, seeds "
        f"{', '.join(map(str, seeds))}. Written by <code>{html.escape(report.get('command', ''))}"
        "</code>."
        if steps
        else ""
    )
    failed = report.get("failed") or []
    note = f"<p>{len(failed)} trials failed: {html.escape(str(failed))}</p>" if failed else ""
    return (
        f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head>\n<body><h1>{html.escape(title)}</h1>\n<p>{intro}</p>\n"
        f"{note}{_summary_table(report)}\n<p>{html.escape(IQM_NOTE)}.</p>\n"
        + "\n".join(charts)
        + "\n</body></html>\n"
    )


def _summary_table(report: Mapping[str, Any]) -> str:
    t = f"{report.get('threshold', 475.0):g}"
    head = (
        f"<tr><th>scheme</th><th>seeds</th><th>reached {t}</th><th>env steps to {t}, median "
        "(range)</th><th>IQM [95% CI]</th><th>best 20-episode mean</th><th>IQM [95% CI]</th>"
        "<th>final 20-episode mean</th><th>IQM [95% CI]</th>"
        "<th>sampled / buffer mean |TD error|</th></tr>"
    )
    rows = []
    for row in report["summary"]:
        cells = [
            html.escape(row["scheme"]),
            str(len(row["seeds"])),
            f"{row['reached']}/{len(row['seeds'])}",
            _span(row, "steps", "{:,.0f}"),
            iqm_cell(row["steps_to_threshold"]),
            _span(row, "best_mean20", "{:.0f}"),
            iqm_cell(row["best_mean20"]),
            _span(row, "final_mean20", "{:.0f}"),
            iqm_cell(row["final_mean20"]),
            _span(row, "sampled_over_buffer_td", "{:.2f}"),
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def _span(row: Mapping[str, Any], key: str, fmt: str) -> str:
    median, low, high = row[f"{key}_median"], row[f"{key}_min"], row[f"{key}_max"]
    if median is None:
        return "-"
    return f"{fmt.format(median)} ({fmt.format(low)}-{fmt.format(high)})"
