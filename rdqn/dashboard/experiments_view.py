"""The Experiments page's view: the PER paper's Blind Cliffwalk figure, read from the results
file that ``python -m rdqn experiment cliffwalk`` writes (`RESULTS`), and the greedy-evaluated
studies beside it (`STUDIES`: DQN on MinAtar, recurrent replay on masked CartPole), read from
theirs in the same folder; nothing is computed here.

`read_results` and `summary_frame` are plain functions (tested without Streamlit); `show_cliffwalk`
and `show_study` draw them. A missing or unreadable file is one notice naming the file and the
command that writes it, never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from rdqn.dashboard.assets import APP_ROOT, explanation
from rdqn.dashboard.display import show_chart
from rdqn.experiments.tables import minatar_table, recurrent_table
from rdqn.figures.experiments import (
    SCHEME_NAMES,
    cliffwalk_figure,
    minatar_figures,
    recurrent_figures,
)

__all__ = [
    "COMMAND",
    "RESULTS",
    "STUDIES",
    "read_results",
    "show_cliffwalk",
    "show_study",
    "summary_frame",
]

RESULTS = APP_ROOT / "benchmarks" / "results" / "cliffwalk.json"
COMMAND = "python -m rdqn experiment cliffwalk --out benchmarks/results/cliffwalk.json"


def read_results(
    path: Path, experiment: str = "cliffwalk"
) -> tuple[dict[str, Any] | None, str | None]:
    """(report, None) for a readable results file of ``experiment``, else (None, why): what is
    wrong with it, for the page to say."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, f"No results yet: `{path.name}` is not in `{path.parent}`."
    except (OSError, ValueError) as err:
        return None, f"`{path}` cannot be read: {err}"
    if not isinstance(report, dict) or report.get("experiment") != experiment:
        return None, f"`{path}` is not a results file of `rdqn experiment {experiment}`."
    return report, None


def summary_frame(summary: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per n, one column per scheme: 'median (min-max)' updates; seeds that did not
    learn within the cap are counted in brackets."""
    cells: dict[int, dict[str, Any]] = {}
    for row in summary:
        median, low, high = row["median"], row["min"], row["max"]
        if median is None:
            text = "—"
        else:
            top = "…" if high is None else f"{high:,.0f}"
            text = f"{median:,.0f} ({low:,.0f}–{top})" if low != high else f"{median:,.0f}"
        if row["learned"] < len(row["seeds"]):
            text += f" [{row['learned']}/{len(row['seeds'])} learned]"
        line = cells.setdefault(row["n"], {"n": row["n"], "memory N": row["memory_size"]})
        line[SCHEME_NAMES.get(row["scheme"], row["scheme"])] = text
    return pd.DataFrame([cells[n] for n in sorted(cells)])


def show_cliffwalk(path: Path | None = None) -> None:
    """The figure, its table and where they come from (``path``: `RESULTS` by default)."""
    st.subheader("The PER paper's figure 1: Blind Cliffwalk")
    st.markdown(explanation("experiments_cliffwalk"))
    report, problem = read_results(RESULTS if path is None else path)
    if report is None:
        st.info(f"{problem} Write it with `{COMMAND}` (about an hour on two cores).")
        return
    show_chart(
        st, cliffwalk_figure(report["summary"], threshold=report.get("threshold")), height=480
    )
    seeds = sorted({s for row in report["summary"] for s in row["seeds"]})
    st.caption(
        f"Updates until the mean squared error to Q* is below {report.get('threshold', 0):g}: "
        f"median and range over seeds {', '.join(map(str, seeds))}. "
        f"Written by `{report.get('command', COMMAND)}`."
    )
    st.dataframe(summary_frame(report["summary"]), hide_index=True, key="experiments.table")


STUDIES: dict[str, tuple[str, str, Callable[[Any], dict[str, Any]], Callable[[Any], str]]] = {
    "minatar": (
        "Where prioritization matters: DQN on MinAtar",
        "python -m rdqn experiment minatar --steps 300000 --out benchmarks/results/minatar.json",
        minatar_figures,
        minatar_table,
    ),
    "recurrent": (
        "Recurrent replay: E14's windows against R2D2's sequences",
        "python -m rdqn experiment recurrent --out benchmarks/results/recurrent.json",
        recurrent_figures,
        recurrent_table,
    ),
}
"""Studies scored by greedy evaluations: title, the command that writes the results file, its
figures and its table (`rdqn.experiments.greedy`)."""


def show_study(name: str) -> None:
    """Study ``name`` of `STUDIES`: its greedy curves and its table, from ``<name>.json`` beside
    `RESULTS`."""
    title, command, figures, table = STUDIES[name]
    st.subheader(title)
    report, problem = read_results(RESULTS.parent / f"{name}.json", name)
    if report is None:
        st.info(f"{problem} Write it with `{command}`.")
        return
    for figure in figures(report).values():
        show_chart(st, figure, height=420)
    st.markdown(table(report))
    st.caption(f"Written by `{report.get('command', command)}`; docs/experiments.md says more.")
