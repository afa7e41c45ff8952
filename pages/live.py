"""Live training: α, β₀ and the scheme up front, play / pause / step / reset, the run's curves."""

import streamlit as st

from dashboard.config_widgets import FORM_FIELDS, config_widget, field_help, form_values
from dashboard.guided import ALL_CONTROLS
from dashboard.lessons import lessons
from dashboard.live import (
    MAIN_CONTROLS,
    RESTARTS,
    STEP_AFTER_THE_END,
    apply_settings,
    current_lesson,
    current_run,
    current_step,
    go_to_step,
    has_ended,
    leave_lesson,
    live_config,
    load_params_once,
    on_main_control,
    prices_note,
    restart,
    restart_pending,
    restart_when_settled,
    restore_live_run,
    resumable_runs,
    resume_run,
    run_is_resumable,
    run_settings,
    step_once,
    sync_url,
    toggle_training,
    try_it_myself,
    use_defaults,
)
from dashboard.live_view import highlight_css, run_view, share_panel, stored_run_view
from dashboard.params import URL_ALIASES, parse_params
from dashboard.state import SPEEDS, ensure_app_frame, registry, session
from dashboard.text import plain

ensure_app_frame()
ss = st.session_state
parsed = parse_params(st.query_params.to_dict())
load_params_once(parsed)
in_lesson = current_lesson()
step = current_step()
visible = set(step.controls) if step else ALL_CONTROLS

title, share = st.columns([2, 1], vertical_alignment="bottom")
title.title("Live training")
for note in parsed.notes:
    st.info(f"URL note: {plain(note)}", icon=":material/link_off:")
if parsed.lesson or in_lesson:
    for error in lessons()[1]:
        st.warning(f"A lesson file did not load: {plain(error)}", icon=":material/error:")
if in_lesson and step is not None:
    lesson, number = in_lesson
    with st.container(border=True, key="live_lesson"):
        text, back, ahead, leave = st.columns([4.5, 1, 1, 2], vertical_alignment="center")
        text.markdown(
            f"**Lesson: {lesson.title}** · step {number} of {len(lesson.steps)}: **{step.title}**"
        )
        back.button(
            "Back",
            key="live.lesson_back",
            disabled=number == 1,
            on_click=go_to_step,
            args=(number - 1,),
        )
        ahead.button(
            "Next",
            key="live.lesson_next",
            type="primary",
            disabled=number == len(lesson.steps),
            on_click=go_to_step,
            args=(number + 1,),
        )
        leave.button("Leave the lesson", key="live.leave_lesson", on_click=leave_lesson)
        st.markdown(step.notice)
    if step.highlight:
        st.html(highlight_css(step.highlight))

# ------------------------------- read-only: follow a class (?follow=) or watch one run (?run=)
watching = parsed.follow is not None or parsed.run_id is not None
if watching:
    watched = registry().live_pages.followed_run(parsed.follow) if parsed.follow else parsed.run_id
    if parsed.follow and not registry().live_pages.has_class(parsed.follow):
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
        stored_run_view(parsed.run_id)
        st.stop()

# ---------------------------------------------------------------- controls
else:
    restore_live_run()
    restart_when_settled()
    config = live_config()
    top = st.container(key="live_area_controls").columns(3)
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
                help=f"{field_help(path)} {RESTARTS}",
            )

    buttons = st.columns([1, 1, 1, 1, 3])
    handle = current_run()
    status = handle.status if handle is not None else None
    ss["live.shown_status"] = (ss["live.run_id"], status)  # what the buttons below assume
    waiting = handle is not None and registry().position(handle.id) is not None
    goes_on = status == "paused" or (status == "stopped" and run_is_resumable(handle.id))
    if buttons[0].button(
        "Resume" if goes_on else "Start",
        icon=":material/play_arrow:",
        disabled=status in ("running", "created") or waiting,  # training, or waiting for a slot
        key="live.start",
        type="primary",
        help="Go on where the run stopped" if goes_on else "Train with these settings",
    ):
        toggle_training()
        st.rerun()
    if buttons[1].button(
        "Pause", icon=":material/pause:", disabled=status != "running", key="live.pause"
    ):
        registry().pause(handle.id, owner=session().owner)
        st.rerun()
    if buttons[2].button(
        "Step",
        icon=":material/skip_next:",
        key="live.step",
        help=STEP_AFTER_THE_END if has_ended(handle) else "One env step, then pause",
        disabled=status == "created",  # queued: a step would give up its place
    ):
        step_once()
    if buttons[3].button(
        "Reset", icon=":material/restart_alt:", key="live.reset", help="Restart from the seed"
    ):
        restart()
        st.rerun()
    if handle is None:
        for run_id, text in resumable_runs():
            where, go_on = st.columns([5, 1], vertical_alignment="center")
            where.caption(plain(text))
            go_on.button(
                "Resume",
                key=f"live.resume_{run_id}",
                on_click=resume_run,
                args=(run_id,),
                help="Go on with this run where it stopped, with its settings",
            )
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
            "Prices CSV (SyntheticMarket only)",
            type=["csv"],
            key="live.upload",
            help="A header row with a 'price' column, one price per row (UTF-8). Without a "
            "file the market simulates its prices.",
        )
        if (prices := prices_note(config)) is not None:
            form.caption(prices)
        values = {
            path: config_widget(form, path, config.get(path), key=None) for path in FORM_FIELDS
        }
        preset_defaults = form.checkbox("Load the preset's own defaults", value=False)
        if form.form_submit_button("Apply and restart", type="primary"):
            apply_settings(
                preset_name,
                form_values(values),
                preset_defaults=preset_defaults,
                upload=(upload.name, upload.getvalue()) if upload is not None else None,
            )
            st.rerun()
        st.sidebar.button("Back to the page defaults", key="live.defaults", on_click=use_defaults)

    if ss["live.error"]:
        st.error(plain(ss["live.error"]))
    sync_url()

    with share.popover("Share with the class", icon=":material/qr_code_2:"):
        share_panel(ss["live.run_id"])


def _status() -> str | None:
    handle = current_run()
    return handle.status if handle is not None else None


@st.fragment(run_every=1.0)
def live_view() -> None:
    if not watching and restart_when_settled():
        st.rerun()  # the whole page: its buttons follow the new run
    if not watching and ss["live.shown_status"] != (ss["live.run_id"], _status()):
        st.rerun()  # the run started, paused or ended by itself: the buttons follow
    if not watching and restart_pending():
        st.caption("The run restarts with the new value once the slider settles…")
    if parsed.follow:  # the teacher's current run, whichever it is by now
        run_id = registry().live_pages.followed_run(parsed.follow)
    else:
        run_id = parsed.run_id or ss["live.run_id"]
    run_view(
        run_id,
        previous_run_id=None if watching else ss["live.previous_run_id"],
        smoothing=ss["live.smoothing"],
        watching=watching,
    )


live_view()
st.slider("Curve smoothing (EMA)", 0.0, 0.99, key="live.smoothing", step=0.01)
