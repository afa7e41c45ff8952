"""The Saved runs page's actions: what a run has done so far, and deleting it.

Keys: ``runs.selected`` (the selected rows, by run id).
"""

from __future__ import annotations

import streamlit as st

from dashboard.history import stored_counters
from dashboard.state import registry, store
from rdqn.runs.store import RunRecord
from rdqn.training.telemetry import Telemetry

__all__ = ["delete_run", "run_counters"]


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
    """Stop the run if this server trains it, delete it and its checkpoint, unselect it."""
    if registry().get(record.id) is not None:
        registry().stop(record.id)
    store().delete_run(record.id)
    st.session_state["runs.selected"] = [
        run_id for run_id in st.session_state["runs.selected"] if run_id != record.id
    ]
