"""Live training: α, β₀ and the scheme up front, play / pause / step / reset, the run's curves."""

import streamlit as st

from rdqn.dashboard.control_sync import (
    MAIN_CONTROLS,
    echo_undone,
    restart_pending,
    restart_when_settled,
    sync_controls,
)
from rdqn.dashboard.fragments import fragment
from rdqn.dashboard.guided import ALL_CONTROLS
from rdqn.dashboard.lesson_navigation import load_params_once
from rdqn.dashboard.lessons import lesson_note, lessons
from rdqn.dashboard.live_controls import lesson_panel, main_controls, run_buttons, settings_form
from rdqn.dashboard.live_run import (
    REFRESH_S,
    current_run,
    refresh_seconds,
    restore_live_run,
    run_settings,
    shown_run,
    try_it_myself,
)
from rdqn.dashboard.live_settings import current_lesson, current_step, sync_url
from rdqn.dashboard.live_view import (
    LESSON_CSS,
    class_code_button,
    run_view,
    share_panel,
    stored_run_view,
    watch_a_class_instead,
)
from rdqn.dashboard.params import parse_params
from rdqn.dashboard.state import (
    ensure_app_frame,
    for_this_viewer,
    live_pages,
    registry,
    shown_value,
)
from rdqn.dashboard.text import plain
from rdqn.dashboard.watch_panel import watch_panel

ensure_app_frame()
ss = st.session_state
parsed = parse_params(st.query_params.to_dict(), lesson_note=lesson_note)
load_params_once(parsed)
in_lesson = current_lesson()
step = current_step()
visible = set(step.controls) if step else ALL_CONTROLS

# Wide enough for both share buttons on one line. In a lesson its panel heads the page and the
# share buttons go to the sidebar: the first screen is for the panel and the outlined chart.
if in_lesson:
    share = st.sidebar.container()
else:
    title, share = st.columns(2, vertical_alignment="bottom")
    title.title("Live training")
for note in parsed.notes:
    st.info(f"URL note: {plain(note)}", icon=":material/link_off:")
if parsed.lesson or in_lesson:
    for error in lessons()[1]:
        st.warning(f"A lesson file did not load: {plain(error)}", icon=":material/error:")
if in_lesson and step is not None:
    st.html(LESSON_CSS)
    lesson_panel(*in_lesson, step)

# ------------------------------- read-only: follow a class (?follow=) or watch one run (?run=)
watching = parsed.follow is not None or parsed.run_id is not None
if watching:
    watched = live_pages().followed_run(parsed.follow) if parsed.follow else parsed.run_id
    if parsed.follow and not live_pages().has_class(parsed.follow):
        st.warning(
            f"No class `{parsed.follow}` on this server: the teacher's session may have ended."
        )
        st.stop()
    if parsed.follow:
        st.caption(f"Following class `{parsed.follow}`: the teacher's current run, read-only.")
    else:
        st.caption(
            f"Watching run `{watched}` read-only: only the session that started it controls it."
        )
    share.button(
        "Try this setup myself",
        icon=":material/fork_right:",
        key="live.fork",
        on_click=try_it_myself,
        args=(parsed.follow, parsed.run_id),
        # Following: the class's run at the time of the click. One run: only one this server has.
        disabled=parsed.follow is None and (watched is None or run_settings(watched) is None),
        help="Start a run of your own with these settings",
    )
    if parsed.run_id is not None and registry().get(parsed.run_id) is None:
        if stored_run_view(parsed.run_id):
            watch_panel(lambda: parsed.run_id)
        st.stop()

# ---------------------------------------------------------------- controls
else:
    restore_live_run()
    restart_when_settled()
    sync_controls()
    if in_lesson:  # the step's controls and the run buttons on one row, the speed aside
        shown = [alias for alias in MAIN_CONTROLS if alias in visible]
        controls, buttons = st.columns([2 * len(shown), 4]) if shown else (None, st)
        if controls is not None:
            main_controls(visible, where=controls)
        run_buttons(where=buttons, speed_where=st.sidebar)
    else:
        main_controls(visible)
        run_buttons()
    if "settings" in visible:
        settings_form()
    watch_a_class_instead(ss["live.run_id"])
    if ss["live.error"]:
        st.error(plain(for_this_viewer(ss["live.error"])))  # no server paths for students
    sync_url()
    with share.container(horizontal=True, horizontal_alignment="left" if in_lesson else "right"):
        with st.popover("Share with the class", icon=":material/qr_code_2:"):
            share_panel(ss["live.run_id"])
        class_code_button()


def _status() -> str | None:
    handle = current_run()
    return handle.status if handle is not None else None


@fragment(run_every=REFRESH_S if watching else refresh_seconds(current_run(), registry()))
def live_view() -> None:
    if not watching and echo_undone():
        st.rerun()  # the whole page: its controls show the run's values again
    if not watching and restart_when_settled():
        st.rerun()  # the whole page: its buttons follow the new run
    if not watching and ss["live.shown_status"] != (ss["live.run_id"], _status()):
        st.rerun()  # the run started, paused or ended by itself: the buttons follow
    if not watching and restart_pending():
        paused = _status() == "paused"
        st.caption(
            "The run restarts from its seed with the new value once the slider settles"
            + ("; the new run stays paused: press Resume to train it." if paused else "…")
        )
    run_id, previous = shown_run(parsed)
    run_view(
        run_id,
        previous_run_id=previous,
        smoothing=ss["live.smoothing"],
        watching=watching,
        lesson_highlight=(step.highlight or "") if step is not None else None,
    )


# A lesson step that points at Watch it play shows it first, on the first screen.
watch_first = step is not None and step.highlight == "watch"
if watch_first:
    watch_panel(lambda: shown_run(parsed)[0])
live_view()
if not watch_first:
    watch_panel(lambda: shown_run(parsed)[0])
st.slider(
    "Curve smoothing (EMA)", 0.0, 0.99, shown_value("live.smoothing"), 0.01, key="live.smoothing"
)
