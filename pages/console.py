"""Teacher's console (the server's admin): who is here, every student run, and the class's
brakes."""

import streamlit as st

from rdqn.dashboard.admin import is_admin
from rdqn.dashboard.console import (
    end_the_class,
    pause_runs,
    runs_frame,
    stop_runs,
    student_runs,
)
from rdqn.dashboard.fragments import fragment
from rdqn.dashboard.ownership import admin_box
from rdqn.dashboard.state import browser_sessions, ensure_app_frame, live_pages

ensure_app_frame()

st.title("Teacher's console")
if not is_admin():
    st.info("The teacher's console is the server's admin's: enter its admin token.")
    admin_box()
    st.stop()


@fragment(run_every=2.0)
def console() -> None:
    here, away = browser_sessions().browsers()
    classes = live_pages().followers()
    top = st.columns(3)
    top[0].metric("Browsers here", f"{here:,}", help="Browsers with a page of the dashboard open")
    top[1].metric(
        "Browsers away",
        f"{away:,}",
        help="Browsers whose pages all closed a moment ago: their runs are paused until they "
        "come back (RDQN_AWAY_WINDOW)",
    )
    top[2].metric("Following a class", f"{sum(classes.values()):,}")
    if classes:
        st.caption(" · ".join(f"class **{code}**: {n:,} following" for code, n in classes.items()))
    if (said := st.session_state.pop("console.said", None)) is not None:
        st.success(said, icon=":material/check_circle:")
    runs = student_runs()
    frame = runs_frame(runs)
    st.subheader(f"Student runs ({len(frame):,})")
    if frame.empty:
        st.caption("No student run trains, waits or is paused now.")
    else:
        table = st.dataframe(
            frame,
            hide_index=True,
            width="stretch",
            on_select="rerun",
            selection_mode="multi-row",
            key="console.table",
        )
        chosen = [frame["run"].iloc[row] for row in table.selection.rows if row < len(frame)]
        every = frame["run"].tolist()
        # (label, key, action, runs): the selected ones, or every student run.
        actions = [
            (f"Pause selected ({len(chosen)})", "pause_chosen", pause_runs, chosen),
            (f"Stop selected ({len(chosen)})", "stop_chosen", stop_runs, chosen),
            ("Pause all student runs", "pause_all", pause_runs, every),
            ("Stop all student runs", "stop_all", stop_runs, every),
        ]
        for column, (label, key, action, targets) in zip(st.columns(4), actions, strict=True):
            column.button(
                label,
                key=f"console.{key}",
                on_click=action,
                args=(targets,),
                disabled=not targets,
                help="A paused or stopped run keeps its checkpoint: its student can go on with it",
            )
    with st.popover("End the class", icon=":material/door_front:"):
        st.markdown(
            "Stops every run on this server, yours too (each can be resumed later), and "
            "closes every class code: its followers are told the class has ended."
        )
        st.button(
            "Stop every run and end the class",
            key="console.end_class",
            type="primary",
            on_click=end_the_class,
        )


console()
