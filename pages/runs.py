"""Saved runs: every run in the store; overlay their curves, open one run's card, export, delete."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard.comparisons import scheme_styled
from dashboard.display import show_chart
from dashboard.figures import runs_overlay_figure, timing_figure
from dashboard.history import (
    final_return,
    format_bytes,
    manifest_summary,
    return_decimals,
    run_label,
    runs_table,
    stored_threshold,
)
from dashboard.ownership import admin_box, may_control, not_yours_note
from dashboard.saved_runs import (
    DELETE_RULE,
    current_record,
    current_statuses,
    delete_run,
    run_counters,
)
from dashboard.state import ensure_app_frame, registry, store
from dashboard.text import plain
from rdqn.compare import ROLLING_WINDOW, Curve
from rdqn.runs.registry import NotOwner
from rdqn.runs.schema import ACTIVE_STATUSES
from rdqn.runs.store import RunRecord

ensure_app_frame()

TABLE_COLUMNS = {
    "name": st.column_config.TextColumn(width="small"),
    "created": st.column_config.DatetimeColumn(format="MMM D, HH:mm"),
    "env steps": st.column_config.NumberColumn(width="small"),
    "episodes": st.column_config.NumberColumn(width="small"),
    "id": st.column_config.TextColumn(width="small"),
}


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


@st.fragment(run_every=2.0)
def live_counters(run_id: str) -> None:
    """The counters of a run that is still training; the whole page reruns once it ends."""
    try:
        record = current_record(store().get_run(run_id))
    except KeyError:
        st.rerun()
    if record.status not in ACTIVE_STATUSES:
        st.rerun()
    counters(record)


def run_card(record: RunRecord) -> None:
    st.subheader(plain(run_label(record.config, record.id)))
    group = f"comparison {record.group_id}" if record.group_id else "single run"
    fields = (record.name, record.id, record.status, record.preset or "custom", record.env_id)
    st.caption(" · ".join(plain(field) for field in (*fields, group)))
    if record.status == "failed":
        st.error(plain(record.error or "no error was recorded"), icon=":material/error:")
    elif record.error:
        st.warning(plain(record.error), icon=":material/stop_circle:")
    if record.status in ACTIVE_STATUSES:
        live_counters(record.id)
    else:
        counters(record)
    manifest = record.manifest or {}
    episodes = store().episodes(record.id)
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
            st.table(pd.DataFrame({"": summary}))
            seconds = (manifest.get("timings") or {}).get("seconds", {})
            show_chart(st, timing_figure(seconds), key="runs.timing")
        else:
            st.caption("Written when the run ends.")
    csv_episodes, csv_steps = st.columns(2)
    csv_episodes.download_button(
        "Episodes (CSV)",
        data=partial(store().export_csv, record.id, "episodes"),
        file_name=f"{record.id}-episodes.csv",
        mime="text/csv",
        on_click="ignore",
        icon=":material/download:",
        key="runs.download_episodes",
    )
    csv_steps.download_button(
        "Updates (CSV)",
        data=partial(store().export_csv, record.id, "steps"),
        file_name=f"{record.id}-steps.csv",
        mime="text/csv",
        on_click="ignore",
        icon=":material/download:",
        key="runs.download_steps",
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


st.title("Saved runs")
admin_box()
runs = current_statuses(store().list_runs())
if runs.empty:
    st.info("No saved runs yet — start one on the Live training page.")
    st.page_link("pages/live.py", label="Live training", icon=":material/monitoring:")
else:
    table = runs_table(runs)
    ids = table["id"].tolist()
    labels = dict(zip(ids, table["run"], strict=True))
    schemes = table.pop("scheme").tolist()
    remembered = [
        ids.index(run_id) for run_id in st.session_state["runs.selected"] if run_id in ids
    ]
    st.caption("Select runs to overlay their curves; select one to open its card.")
    event = st.dataframe(
        scheme_styled(table, schemes, "run", {"created": "{:%b %d, %H:%M}"}),
        hide_index=True,
        column_config=TABLE_COLUMNS,
        on_select="rerun",
        selection_mode="multi-row",
        selection_default={"selection": {"rows": remembered}},
        # Rows shift when runs are added or deleted: a new key re-applies the remembered ids.
        key=f"runs.table.{len(ids)}",
    )
    chosen = [ids[row] for row in event.selection.rows]
    st.session_state["runs.selected"] = chosen
    if chosen:
        rows = runs.set_index("id").loc[chosen]
        curves: dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]] = {}
        for run_id in chosen:
            curve = Curve.from_episodes(store().episodes(run_id))
            curves[labels[run_id]] = (curve.end_steps, curve.returns)
        envs = set(rows["env_id"])
        threshold = stored_threshold(envs.pop()) if len(envs) == 1 else None
        overlay = runs_overlay_figure(
            curves,
            schemes={labels[run_id]: rows.loc[run_id, "scheme"] for run_id in chosen},
            threshold=threshold,
        )
        show_chart(st, overlay, key="runs.overlay")
        card_id = chosen[0]
        if len(chosen) > 1:
            card_id = st.selectbox(
                "Run card for", chosen, format_func=labels.__getitem__, key="runs.card"
            )
        st.divider()
        run_card(current_record(store().get_run(card_id)))
