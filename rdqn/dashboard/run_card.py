"""One run's card on Saved runs: its counters (live while it trains), returns, config,
manifest and timings, CSV downloads, and deleting it (for the browser that started it, or the
admin: `rdqn.dashboard.ownership`)."""

from __future__ import annotations

import math
from functools import partial

import pandas as pd
import streamlit as st

from rdqn.compare import ROLLING_WINDOW, return_decimals, run_label
from rdqn.dashboard.display import show_chart
from rdqn.dashboard.fragments import fragment
from rdqn.dashboard.history import (
    final_return,
    format_bytes,
    manifest_summary,
)
from rdqn.dashboard.ownership import may_control, not_yours_note
from rdqn.dashboard.saved_runs import DELETE_RULE, delete_run, run_counters
from rdqn.dashboard.state import for_this_viewer, registry, store
from rdqn.dashboard.text import plain
from rdqn.figures import timing_figure
from rdqn.runs.schema import ACTIVE_STATUSES
from rdqn.runs.store import RunRecord
from rdqn.serve.registry import NotOwner

CSV_LABELS = {
    "episodes": "Episodes (CSV)",
    "steps": "Updates (CSV)",
    "evaluations": "Evaluations (CSV)",
}
"""The run's tables a card offers as CSV (`rdqn.runs.metric_tables.CSV_KINDS`)."""

__all__ = ["run_card"]


def counters(record: RunRecord) -> None:
    """Env steps, updates and episodes (and speed while training) of one run."""
    done, snapshot = run_counters(record)
    total = record.config.get("train", {}).get("total_steps", 0)
    steps, updates, episodes, rate = st.columns(4)
    steps.metric(f"Env steps (budget {total:,})", f"{done['env_steps']:,}")
    updates.metric("Updates", f"{done['updates']:,}")
    episodes.metric("Episodes", f"{done['episodes']:,}")
    if snapshot is not None and record.status in ACTIVE_STATUSES:
        rate.metric("Env steps per second", f"{snapshot.steps_per_second:,.0f}")


@fragment(run_every=2.0)
def live_counters(run_id: str) -> None:
    """The counters of a run that is still training; the whole page reruns once it ends."""
    try:
        record = store().get_run(run_id)
    except KeyError:
        st.rerun()
    if record.status not in ACTIVE_STATUSES:
        st.rerun()
    counters(record)


def run_card(record: RunRecord) -> None:
    """The card of one stored run."""
    st.subheader(plain(run_label(record.config, record.id)))
    group = f"comparison {record.group_id}" if record.group_id else "single run"
    fields = (record.id, record.status, record.preset or "custom", record.env_id, group)
    if record.name != record.default_name:  # the default repeats the preset and the env
        fields = (record.name, *fields)
    st.caption(" · ".join(plain(field) for field in fields))
    if record.status == "failed":
        st.error(
            plain(for_this_viewer(record.error or "no error was recorded")), icon=":material/error:"
        )
    elif record.error:
        st.warning(plain(for_this_viewer(record.error)), icon=":material/stop_circle:")
    start = record.resume_env_steps
    if record.status == "stopped" and start is not None and start < record.env_steps:
        st.caption(
            f"Resuming goes on from step {start:,}, its last checkpoint: the "
            f"{record.env_steps - start:,} steps recorded after it are dropped."
        )
    if record.status in ACTIVE_STATUSES:
        live_counters(record.id)
    else:
        counters(record)
    manifest = record.manifest or {}
    episodes = store().metrics.episodes(record.id)
    final, peak, params = st.columns(3)
    last = final_return(episodes["return"])
    label = "Recent return" if record.status in ACTIVE_STATUSES else "Final return"
    shown = "—" if math.isnan(last) else f"{last:.{return_decimals([last])}f}"
    final.metric(f"{label} (last {ROLLING_WINDOW} episodes)", shown)
    peak.metric("Peak process memory", format_bytes(manifest.get("peak_memory_bytes")))
    params.metric("Parameter bytes", format_bytes(manifest.get("parameter_bytes")))
    config_col, manifest_col = st.columns(2)
    with config_col:
        st.markdown("**Config**")
        st.json(record.config, expanded=2)
    with manifest_col:
        st.markdown("**Manifest**")
        if manifest:
            summary = {name: plain(value) for name, value in manifest_summary(manifest).items()}
            table = pd.DataFrame({"item": list(summary), "value": list(summary.values())})
            st.table(table.style.hide(axis="index"))  # a header that says something
            seconds = (manifest.get("timings") or {}).get("seconds", {})
            show_chart(st, timing_figure(seconds), key="runs.timing")
        else:
            st.caption("Written when the run ends.")
    for column, (kind, label) in zip(st.columns(len(CSV_LABELS)), CSV_LABELS.items(), strict=True):
        column.download_button(
            label,
            data=partial(store().metrics.export_csv, record.id, kind),
            file_name=f"{record.id}-{kind}.csv",
            mime="text/csv",
            on_click="ignore",
            icon=":material/download:",
            key=f"runs.download_{kind}",
        )
    elsewhere = record.status in ACTIVE_STATUSES and registry().get(record.id) is None
    allowed = may_control(record.id)
    with st.expander("Delete this run"):
        st.caption(DELETE_RULE)
        if elsewhere:
            st.caption("This run is training in another process; stop it there first.")
        elif not allowed:
            st.caption(not_yours_note(record.id))
        sure = st.checkbox(
            "I am sure", key=f"runs.sure.{record.id}", disabled=elsewhere or not allowed
        )
        if st.button("Delete run", key="runs.delete", type="primary", disabled=not sure):
            try:
                delete_run(record)
            except NotOwner as err:
                st.error(plain(err), icon=":material/lock:")
            else:
                st.rerun()
