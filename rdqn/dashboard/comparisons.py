"""The Compare page's session glue: the comparison on show, linked by ``?group=``, its runs.

A comparison's runs share a group id in the store; the id travels in the URL, so a reload or a
shared link shows the same comparison. Only the session that started it (or the admin) may stop
it (`rdqn.dashboard.ownership`); from a link another session watches it. Keys: ``compare.group``
(run ids, in the order they were queued) and ``compare.group_id``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler

from rdqn.compare import (
    FINAL_IQM,
    IMPROVEMENT,
    ROLLING_WINDOW,
    STEPS_IQM,
    interval_column,
    return_decimals,
    shown_intervals,
    summary_decimals,
    summary_note,
    summary_table,
)
from rdqn.config import RunConfig
from rdqn.dashboard.display import show_chart
from rdqn.dashboard.history import (
    curves_by_scheme,
    group_progress,
    progress_frame,
    scheme_labels,
)
from rdqn.dashboard.ownership import may_control, stop_reason
from rdqn.dashboard.state import for_this_viewer, registry, session, store
from rdqn.figures import SCHEME_COLORS, comparison_figure, evaluation_figure
from rdqn.limits import check_comparison_runs, check_limits
from rdqn.runs.resume import stored_evaluations
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.training.evaluation import Evaluations

__all__ = [
    "comparison_results",
    "scheme_styled",
    "group_is_live",
    "linked_group",
    "may_stop",
    "start_comparison",
    "stop_runs",
]


def linked_group() -> tuple[str | None, list[str]]:
    """This session's comparison, or the one named by ``?group=`` (loaded from the store)."""
    ss = st.session_state
    linked = st.query_params.get("group")
    if linked and linked.isalnum() and linked != ss["compare.group_id"]:
        ss["compare.group"] = store().list_runs(group_id=linked)["id"].tolist()[::-1]
        ss["compare.group_id"] = linked
    if ss["compare.group_id"]:
        st.query_params["group"] = ss["compare.group_id"]
    return ss["compare.group_id"], ss["compare.group"]


def stop_runs(run_ids: Sequence[str], owner: str | None) -> None:
    """Stop those of a comparison's runs that ``owner`` may control (None: all, the admin),
    queued ones first (so a freed slot does not start one)."""
    for run_id in reversed(run_ids):
        if registry().may_control(run_id, owner):
            registry().stop(run_id, owner=owner, reason=stop_reason(run_id))


def may_stop(run_ids: Sequence[str]) -> bool:
    """Whether this session may stop the comparison: its own, or as the admin."""
    return any(may_control(run_id) for run_id in run_ids)


def start_comparison(configs: Sequence[RunConfig]) -> tuple[str, list[str]]:
    """Replace the comparison on show with new runs, queued within the run cap. Its runs stop
    if they are this session's; another session's comparison (from its link) goes on.
    `ValueError` (nothing stopped or started) when the runs are past the server's limits."""
    check_comparison_runs(len(configs))
    for config in configs:
        check_limits(config)
    stop_runs(st.session_state["compare.group"], session().owner)
    group_id = uuid.uuid4().hex[:12]
    handles = registry().enqueue(configs, owner=session().owner, group_id=group_id)
    run_ids = [handle.id for handle in handles]
    st.session_state["compare.group"] = run_ids
    st.session_state["compare.group_id"] = group_id
    st.query_params["group"] = group_id
    return group_id, run_ids


def group_is_live(run_ids: Sequence[str]) -> bool:
    """Whether any run of the comparison is still queued or training on this server."""
    handles = [registry().get(run_id) for run_id in run_ids]
    return any(h is not None and h.status not in FINAL_STATUSES for h in handles)


STATUS_COLUMNS = {
    # A queued run's status starts with its place in line; the rest may be cut (hover shows it).
    "status": st.column_config.TextColumn(width="medium"),
    "progress": st.column_config.ProgressColumn(
        min_value=0, max_value=100, format="%d%%", width="small"
    ),
    "error": st.column_config.TextColumn(width="large"),
}


SUMMARY_COLUMNS = {
    "final return (mean)": st.column_config.NumberColumn(
        "final (mean)",
        help=f"Mean return of each seed's last {ROLLING_WINDOW} episodes, averaged over seeds",
    ),
    "final return (min)": st.column_config.NumberColumn(
        "final (worst)", help="The lowest of the seeds' final returns"
    ),
    "reached threshold": st.column_config.TextColumn(
        "reached", help="Seeds whose rolling mean reached the threshold"
    ),
    "episodes to threshold": st.column_config.NumberColumn(
        "episodes to it", help="Episodes until the threshold, mean over the seeds that got there"
    ),
    "steps to threshold": st.column_config.NumberColumn(
        "env steps to it", help="Env steps until the threshold, mean over the seeds that got there"
    ),
    interval_column(FINAL_IQM): st.column_config.TextColumn(
        "final (IQM [95% CI])",
        help="Interquartile mean of the seeds' final returns (the mean of their middle half), "
        "with its stratified bootstrap 95% interval",
    ),
    interval_column(IMPROVEMENT): st.column_config.TextColumn(
        "P(final > uniform)",
        help="The chance that a seed of this scheme ends above a seed of uniform replay (ties "
        "count half), with its bootstrap 95% interval",
    ),
    interval_column(STEPS_IQM): st.column_config.TextColumn(
        "env steps to it (IQM [95% CI])",
        help="Interquartile mean of the env steps to the threshold over the seeds that got "
        "there, with its stratified bootstrap 95% interval",
    ),
}
"""Short headers for the summary table (`rdqn.compare.summary_table`), full names as help, so
it fits 1280 px beside the sidebar."""


def scheme_styled(
    frame: pd.DataFrame, schemes: list[str], column: str, formats: dict[str, str]
) -> Styler:
    """``frame`` with ``column`` in each row's scheme colour (as in every chart) and its number
    columns formatted (``{name: "{:,.2f}"}``; the same decimals all down a column)."""
    colors = [SCHEME_COLORS.get(scheme) for scheme in schemes]
    css = [f"color: {color}; font-weight: 600" if color else "" for color in colors]
    return (
        frame.style.apply(lambda _: css, subset=[column])
        .format(formats, na_rep="—")
        .format("{:,}", subset=[c for c in ("env steps", "episodes") if c in frame.columns])
    )


def comparison_results(run_ids: list[str], threshold: float | None, live: bool) -> None:
    """Status table, learning curves and threshold table; reruns every second while live."""
    rows = group_progress(run_ids, registry(), store())
    if not rows:
        st.info("The runs of this comparison are no longer in the store.")
        return
    status = progress_frame(rows)
    schemes = status.pop("scheme").tolist()
    if status["error"].any():
        status["error"] = [for_this_viewer(e) if isinstance(e, str) else e for e in status["error"]]
    else:
        status = status.drop(columns="error")
    returns = f"return (last {ROLLING_WINDOW})"
    decimals = return_decimals(status[returns])
    st.dataframe(
        scheme_styled(status, schemes, "run", {returns: f"{{:.{decimals}f}}"}),
        hide_index=True,
        column_config=STATUS_COLUMNS,
        placeholder="—",
        key="compare.status",
    )
    curves = curves_by_scheme(rows)
    labels = scheme_labels(rows)
    total_steps = max(row.total_steps for row in rows)
    show_chart(
        st,
        comparison_figure(
            curves,
            total_steps=total_steps,
            threshold=threshold,
            window=ROLLING_WINDOW,
            labels=labels,
            warm_up=max(row.learning_starts for row in rows),
        ),
        key="compare.figure",
    )
    st.markdown(f"**Episodes to threshold** (rolling mean of {ROLLING_WINDOW} episodes)")
    table = summary_table(curves, threshold, ROLLING_WINDOW)
    shown = shown_intervals(table)
    formats = {name: f"{{:,.{d}f}}" for name, d in summary_decimals(table).items() if name in shown}
    schemes = shown["scheme"].tolist()
    shown["scheme"] = [labels.get(scheme, scheme) for scheme in schemes]
    st.dataframe(
        scheme_styled(shown, schemes, "scheme", formats),
        hide_index=True,
        column_config=SUMMARY_COLUMNS,
        placeholder="—",
        key="compare.summary",
    )
    st.caption(summary_note(table))
    evaluated = {row.run_id: stored_evaluations(store(), row.run_id) for row in rows}
    if any(evaluated.values()):
        by_scheme: dict[str, list[Evaluations]] = {}
        for row in rows:
            by_scheme.setdefault(row.scheme, []).append(evaluated[row.run_id])
        show_chart(
            st,
            evaluation_figure(by_scheme, labels=labels, threshold=threshold),
            key="compare.evaluations",
        )
    if live and all(row.done for row in rows):
        st.rerun()
