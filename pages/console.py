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
        row = st.columns(4)
        row[0].button(
            f"Pause selected ({len(chosen)})",
            key="console.pause_chosen",
            on_click=pause_runs,
            args=(chosen,),
            disabled=not chosen,
        )
        row[1].button(
            f"Stop selected ({len(chosen)})",
            key="console.stop_chosen",
            on_click=stop_runs,
            args=(chosen,),
            disabled=not chosen,
        )
        row[2].button(
            "Pause all student runs", key="console.pause_all", on_click=pause_runs, args=(every,)
        )
        row[3].button(
            "Stop all student runs",
            key="console.stop_all",
            on_click=stop_runs,
            args=(every,),
            help="Each saves a resume checkpoint: its student can go on with it",
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
