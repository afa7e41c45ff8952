"""Live training: α, β₀ and the scheme up front, play / pause / step / reset, the run's curves."""

import streamlit as st

from dashboard.config_widgets import FORM_FIELDS, config_widget, form_values
from dashboard.lessons import ALL_CONTROLS
from dashboard.live import (
    MAIN_CONTROLS,
    apply_settings,
    current_lesson,
    current_run,
    leave_lesson,
    live_config,
    load_params_once,
    on_main_control,
    restart,
    sync_url,
    use_defaults,
)
from dashboard.live_view import run_view, stored_run_view
from dashboard.params import URL_ALIASES, parse_params
from dashboard.state import SPEEDS, ensure_app_frame, registry

ensure_app_frame()
ss = st.session_state
parsed = parse_params(st.query_params.to_dict())
load_params_once(parsed)
lesson = current_lesson()
visible = set(lesson.controls) if lesson else ALL_CONTROLS

st.title("Live training")
for note in parsed.notes:
    st.info(f"URL note: {note}", icon=":material/link_off:")
if lesson:
    text, leave = st.columns([6, 1], vertical_alignment="center")
    text.markdown(f"**Lesson: {lesson.title}.** {lesson.prompt}")
    leave.button("Leave the lesson", key="live.leave_lesson", on_click=leave_lesson)

# ---------------------------------------------------------------- watch mode (?run=<id>)
if parsed.run_id is not None:
    st.caption(f"Watching run `{parsed.run_id}` read-only.")
    if registry().get(parsed.run_id) is None:
        stored_run_view(parsed.run_id)
        st.stop()

# ---------------------------------------------------------------- controls
else:
    config = live_config()
    top = st.columns(3)
    for column, alias in zip(top, MAIN_CONTROLS, strict=True):
        if alias in visible:
            path = URL_ALIASES[alias]
            config_widget(
                column,
                path,
                config.get(path),
                key=f"live.{alias}",
                on_change=on_main_control,
                args=(alias,),
            )

    buttons = st.columns([1, 1, 1, 1, 3])
    handle = current_run()
    status = handle.status if handle is not None else None
    active = status in ("running", "paused")
    if buttons[0].button(
        "Resume" if status == "paused" else "Start",
        icon=":material/play_arrow:",
        disabled=status in ("running", "created"),  # training, or waiting for a slot
        key="live.start",
        type="primary",
    ):
        if status == "paused":
            handle.resume()
        else:
            restart()
        st.rerun()
    if buttons[1].button(
        "Pause", icon=":material/pause:", disabled=status != "running", key="live.pause"
    ):
        handle.pause()
        st.rerun()
    if buttons[2].button(
        "Step", icon=":material/skip_next:", key="live.step", help="One env step, then pause"
    ):
        if not active:
            restart(paused=True)
            handle = current_run()
        if handle is not None:
            handle.step_once()
    if buttons[3].button(
        "Reset", icon=":material/restart_alt:", key="live.reset", help="Restart from the seed"
    ):
        restart()
        st.rerun()
    speed = buttons[4].select_slider(
        "Speed",
        list(SPEEDS),
        key="live.speed",
        help="Slow down to watch single updates; full speed for real training",
    )
    if handle is not None and handle.speed != SPEEDS[speed]:
        handle.set_speed(SPEEDS[speed])

    if "settings" in visible:
        form = st.sidebar.form("live.settings_form")
        form.markdown("**Run settings**")
        preset_name = config_widget(form, "preset", ss["live.preset"], key=None)
        upload = form.file_uploader(
            "Prices CSV (SyntheticMarket only)", type=["csv"], key="live.upload"
        )
        values = {
            path: config_widget(form, path, config.get(path), key=None) for path in FORM_FIELDS
        }
        preset_defaults = form.checkbox("Load the preset's own defaults", value=False)
        if form.form_submit_button("Apply and restart", type="primary"):
            apply_settings(
                preset_name,
                form_values(values),
                preset_defaults=preset_defaults,
                upload=upload.getvalue() if upload is not None else None,
            )
            st.rerun()
        st.sidebar.button("Back to the page defaults", key="live.defaults", on_click=use_defaults)

    if ss["live.error"]:
        st.error(ss["live.error"])
    sync_url()


@st.fragment(run_every=1.0)
def live_view() -> None:
    watching = parsed.run_id is not None
    run_view(
        parsed.run_id if watching else ss["live.run_id"],
        previous_run_id=None if watching else ss["live.previous_run_id"],
        smoothing=ss["live.smoothing"],
    )


live_view()
st.slider("Curve smoothing (EMA)", 0.0, 0.99, key="live.smoothing", step=0.01)
if ss["live.run_id"] and parsed.run_id is None:
    st.caption(f"Share this run read-only: add `?run={ss['live.run_id']}` to this page's address.")
