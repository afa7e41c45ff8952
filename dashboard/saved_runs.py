"""The Saved runs page's actions: what a run has done so far, and deleting it.

Deleting is for the browser that started the run, or the server's admin
(`dashboard.ownership`). Keys: ``runs.selected`` (the selected rows, by run id).
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from dashboard.history import stored_counters
from dashboard.ownership import actor
from dashboard.state import registry, store
from rdqn.runs.store import RunRecord
from rdqn.training.telemetry import Telemetry

__all__ = ["DELETE_RULE", "current_record", "current_statuses", "delete_run", "run_counters"]

DELETE_RULE = (
    "Only the browser that started a run may delete it (or stop it), while one of its tabs "
    "is open; the server's admin (who knows its RDQN_ADMIN_TOKEN) may delete any run, and so "
    "does `python -m rdqn runs delete ID` on the server."
)


def current_record(record: RunRecord) -> RunRecord:
    """The stored run with the status (and error) its handle has now, while this server holds
    it: the handle knows at once that a run failed or was stopped, before the store does."""
    handle = registry().get(record.id)
    if handle is None or handle.status == record.status:
        return record
    return replace(record, status=handle.status, error=handle.error or record.error)


def current_statuses(runs: pd.DataFrame) -> pd.DataFrame:
    """`RunStore.list_runs()` with the statuses of the runs this server holds as their handles
    say (`current_record`)."""
    statuses = []
    for run_id, stored in zip(runs["id"], runs["status"], strict=True):
        handle = registry().get(run_id)
        statuses.append(stored if handle is None else handle.status)
    return runs.assign(status=statuses)


def run_counters(record: RunRecord) -> tuple[dict[str, int], Telemetry | None]:
    """Env steps, updates and episodes of a run: from its live snapshot while this server trains
    it (returned too), else from the store."""
    handle = registry().get(record.id)
    snapshot = handle.snapshot() if handle is not None else None
    if snapshot is None:
        return stored_counters(record, store().episodes(record.id)), None
    counters = {
        "env_steps": snapshot.env_steps,
        "updates": snapshot.updates,
        "episodes": snapshot.episodes,
    }
    return counters, snapshot


def delete_run(record: RunRecord) -> None:
    """Stop the run if this server trains it, delete it and its checkpoint, unselect it
    (`rdqn.runs.registry.NotOwner` if it is not this session's to delete)."""
    registry().delete(record.id, owner=actor())
    st.session_state["runs.selected"] = [
        run_id for run_id in st.session_state["runs.selected"] if run_id != record.id
    ]
