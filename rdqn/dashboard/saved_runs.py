"""The Saved runs page's table and actions: why each run stopped, what a run has done so far,
and deleting it.

A run's status is read from the store: its worker records every change there before it tells
the server (`rdqn.serve.handle`), so the store is never behind a live run's handle.

Deleting is for the browser that started the run, or the server's admin
(`rdqn.dashboard.ownership`). Keys: ``runs.selected`` (the selected rows, by run id).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import streamlit as st

from rdqn.dashboard.fragments import fragment
from rdqn.dashboard.history import stored_counters
from rdqn.dashboard.ownership import actor
from rdqn.dashboard.state import registry, store
from rdqn.dashboard.text import why_stopped
from rdqn.runs.store import RunRecord
from rdqn.training.telemetry import Telemetry

__all__ = [
    "DELETE_RULE",
    "STOP_COLUMN",
    "WATCH_S",
    "delete_run",
    "redraw_when_a_status_changes",
    "run_counters",
    "stop_reasons",
]

STOP_COLUMN = "why it stopped"
"""The table's column of stop reasons (beside the status)."""

DELETE_RULE = (
    "Only the browser that started a run may delete it (or stop it), while one of its tabs "
    "is open; the server's admin (who knows its RDQN_ADMIN_TOKEN) may delete any run, and so "
    "does `python -m rdqn runs delete ID` on the server."
)


WATCH_S = 2.0
"""How often an open Saved runs page checks the statuses of the runs it lists."""
CHANGING = ("created", "running")
"""Statuses a run leaves by itself (it starts; it stops, finishes or fails)."""


def redraw_when_a_status_changes(listed: Mapping[str, str]) -> None:
    """While the page lists a run whose status can change by itself (``listed``: each run's
    status as the page shows it, by id), check the store every `WATCH_S` seconds and draw the
    page anew once a run's status differs from it, or a run came or went: the status filter
    and the table show the runs as they are (a run a moved slider replaced shows as stopped
    once its worker has saved it, a second or so after the page opened)."""
    if any(status in CHANGING for status in listed.values()):
        _watch(dict(listed))


@fragment(run_every=WATCH_S)
def _watch(listed: dict[str, str]) -> None:
    if store().statuses() != listed:
        st.rerun(scope="app")


def stop_reasons(runs: pd.DataFrame) -> list[str]:
    """Why each run of ``runs`` (`RunStore.list_runs`) stopped, as the table says it: the
    recorded reason of a stopped run ('replaced by run 3f2a... (α 0.8)', 'nobody watched this
    run for 120 s'; 'no reason recorded' in a store from before reasons were kept), the error
    of a failed one, nothing for the others."""
    reasons = []
    for status, error in zip(runs["status"], runs["error"], strict=True):
        if status == "stopped":
            reasons.append(why_stopped(error, default="no reason recorded"))
        elif status == "failed":
            told = error.strip() if isinstance(error, str) else ""
            reasons.append(told or "no error recorded")
        else:
            reasons.append("")
    return reasons


def run_counters(record: RunRecord) -> tuple[dict[str, int], Telemetry | None]:
    """Env steps, updates and episodes of a run: from its live snapshot while this server trains
    it (returned too), else from the store."""
    handle = registry().get(record.id)
    snapshot = handle.snapshot() if handle is not None else None
    if snapshot is None:
        return stored_counters(record, store().metrics.episodes(record.id)), None
    counters = {
        "env_steps": snapshot.env_steps,
        "updates": snapshot.updates,
        "episodes": snapshot.episodes,
    }
    return counters, snapshot


def delete_run(record: RunRecord) -> None:
    """Stop the run if this server trains it, delete it and its checkpoint, unselect it
    (`rdqn.serve.registry.NotOwner` if it is not this session's to delete)."""
    registry().delete(record.id, owner=actor())
    st.session_state["runs.selected"] = [
        run_id for run_id in st.session_state["runs.selected"] if run_id != record.id
    ]
