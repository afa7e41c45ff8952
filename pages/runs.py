"""Saved runs: every run in the store, filtered by status; overlay their curves, open one run's
card, export, delete."""

from __future__ import annotations

import numpy as np
import streamlit as st
from numpy.typing import NDArray

from rdqn.compare import Curve
from rdqn.dashboard.comparisons import scheme_styled
from rdqn.dashboard.display import show_chart
from rdqn.dashboard.history import runs_table, stored_threshold
from rdqn.dashboard.ownership import admin_box
from rdqn.dashboard.run_card import run_card
from rdqn.dashboard.saved_runs import STOP_COLUMN, redraw_when_a_status_changes, stop_reasons
from rdqn.dashboard.state import ensure_app_frame, for_this_viewer, store
from rdqn.figures import runs_overlay_figure

ensure_app_frame()

# The run's label whole (scheme, α, β₀, seed and short id: what tells runs apart); the table
# scrolls sideways to the rest where the page is narrow.
TABLE_COLUMNS = {
    "run": st.column_config.TextColumn(width=290),
    "name": st.column_config.TextColumn(width="small"),
    STOP_COLUMN: st.column_config.TextColumn(width="medium"),
    "created": st.column_config.DatetimeColumn(format="MMM D, HH:mm"),
    "env steps": st.column_config.NumberColumn(width="small"),
    "episodes": st.column_config.NumberColumn(width="small"),
    "id": st.column_config.TextColumn(width="small"),
}


st.title("Saved runs")
admin_box()
runs = store().list_runs()
redraw_when_a_status_changes(dict(zip(runs["id"], runs["status"], strict=True)))
if runs.empty:
    st.info("No saved runs yet — start one on the Live training page.")
    st.page_link("pages/live.py", label="Live training", icon=":material/monitoring:")
else:
    statuses = runs["status"].value_counts()
    options = sorted(statuses.index)
    hidden = st.session_state["runs.hidden_statuses"]
    shown = st.pills(
        "Show",
        options,
        selection_mode="multi",
        default=[status for status in options if status not in hidden],
        format_func=lambda status: f"{status} ({statuses[status]})",
        # A new set of statuses (a run started, stopped or was deleted) is a new widget that
        # starts from the hidden statuses: the old one's choice would drop a status it never
        # offered, and with it the run that just changed.
        key=f"runs.statuses.{'.'.join(options)}",
        help="Runs a moved slider stopped are kept as 'stopped': hide them to see the rest.",
    )
    # The one record of the viewer's choice, kept apart from the widget (whose state Streamlit
    # drops when the page is left): the statuses hidden here, and those hidden before that no
    # run has now.
    st.session_state["runs.hidden_statuses"] = [
        *(status for status in hidden if status not in statuses.index),
        *(status for status in options if status not in shown),
    ]
    runs = runs[runs["status"].isin(shown)].reset_index(drop=True)
    if runs.empty:
        st.caption("No run has the statuses chosen above.")
if not runs.empty:
    table = runs_table(runs)
    table.insert(
        table.columns.get_loc("status") + 1,
        STOP_COLUMN,
        [for_this_viewer(why) for why in stop_reasons(runs)],
    )
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
            curve = Curve.from_episodes(store().metrics.episodes(run_id))
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
        run_card(store().get_run(card_id))
