"""The Compare page's session glue: the comparison on show, linked by ``?group=``, its runs.

A comparison's runs share a group id in the store; the id travels in the URL, so a reload or a
shared link shows the same comparison. Keys: ``compare.group`` (run ids, in the order they were
queued) and ``compare.group_id``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import streamlit as st

from dashboard.display import show_chart
from dashboard.figures import comparison_figure
from dashboard.history import curves_by_scheme, group_progress, progress_frame
from dashboard.state import registry, session, store
from rdqn.compare import ROLLING_WINDOW, summary_table
from rdqn.config import RunConfig
from rdqn.runs.schema import FINAL_STATUSES

__all__ = [
    "comparison_results",
    "group_is_live",
    "linked_group",
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


def stop_runs(run_ids: Sequence[str]) -> None:
    """Stop a comparison's runs, queued ones first (so a freed slot does not start one)."""
    for run_id in reversed(run_ids):
        registry().stop(run_id)


def start_comparison(configs: Sequence[RunConfig]) -> tuple[str, list[str]]:
    """Replace the comparison on show with new runs, queued within the run cap."""
    stop_runs(st.session_state["compare.group"])
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
    "progress": st.column_config.ProgressColumn(min_value=0, max_value=100, format="%d%%"),
    f"return (last {ROLLING_WINDOW})": st.column_config.NumberColumn(format="%.1f"),
    "env steps": st.column_config.NumberColumn(format="localized"),
    "episodes": st.column_config.NumberColumn(format="localized"),
    "error": st.column_config.TextColumn(width="large"),
}


def comparison_results(run_ids: list[str], threshold: float | None, live: bool) -> None:
    """Status table, learning curves and threshold table; reruns every second while live."""
    rows = group_progress(run_ids, registry(), store())
    if not rows:
        st.info("The runs of this comparison are no longer in the store.")
        return
    status = progress_frame(rows)
    if not status["error"].any():
        status = status.drop(columns="error")
    st.dataframe(status, hide_index=True, column_config=STATUS_COLUMNS, placeholder="—")
    curves = curves_by_scheme(rows)
    total_steps = max(row.total_steps for row in rows)
    show_chart(
        st,
        comparison_figure(
            curves, total_steps=total_steps, threshold=threshold, window=ROLLING_WINDOW
        ),
        key="compare.figure",
    )
    st.markdown(f"**Episodes to threshold** (rolling mean of {ROLLING_WINDOW} episodes)")
    st.dataframe(
        summary_table(curves, threshold, ROLLING_WINDOW).round(1),
        hide_index=True,
        placeholder="—",
        key="compare.summary",
    )
    if live and all(row.done for row in rows):
        st.rerun()
