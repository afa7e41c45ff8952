"""The Compare page's session glue: the comparison on show, linked by ``?group=``, its runs.

A comparison's runs share a group id in the store; the id travels in the URL, so a reload or a
shared link shows the same comparison. Keys: ``compare.group`` (run ids, in the order they were
queued) and ``compare.group_id``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import streamlit as st

from dashboard.state import registry, session, store
from rdqn.config import RunConfig

__all__ = ["linked_group", "start_comparison", "stop_runs"]


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
