"""The live page's controls: the lesson panel, α / β₀ / scheme, the run buttons, the speed and
the sidebar's settings form. Each shows the run on screen
(`rdqn.dashboard.control_sync.sync_controls`); only a person moving one changes a run."""

from __future__ import annotations

from typing import Any

import streamlit as st

from rdqn.dashboard.config_widgets import (
    FORM_FIELDS,
    SEQUENCE_FIELDS,
    config_widget,
    field_help,
    form_values,
)
from rdqn.dashboard.control_sync import MAIN_CONTROLS, RESTARTS, on_main_control, on_speed
from rdqn.dashboard.guided import GuidedLesson, LessonStep
from rdqn.dashboard.lesson_navigation import go_to_step, leave_lesson
from rdqn.dashboard.live_run import (
    STEP_AFTER_THE_END,
    current_run,
    has_ended,
    restart,
    resumable_runs,
    resume_run,
    run_is_resumable,
    step_once,
    toggle_training,
)
from rdqn.dashboard.live_settings import current_lesson, live_config, use_defaults
from rdqn.dashboard.live_view import highlight_css
from rdqn.dashboard.params import URL_ALIASES
from rdqn.dashboard.settings_apply import apply_settings, prices_note
from rdqn.dashboard.state import SPEEDS, registry, session, shown_value
from rdqn.dashboard.text import plain
from rdqn.serve.handle import RunHandle

__all__ = ["lesson_panel", "main_controls", "run_buttons", "settings_form"]

LONG_PRESETS: dict[str, str] = {
    "e14": "The e14 preset trains a recurrent network at tens of env steps per second: its "
    "50,000 steps take about 30-45 minutes on a two-core machine. For a class, the "
    "**e14-lesson** preset shows the same effect in about 2 minutes.",
    "e15": "The e15 preset trains a recurrent network at tens of env steps per second: its "
    "50,000 steps take about 30-45 minutes on a two-core machine.",
    "minatar": "The minatar preset trains a conv net on a MinAtar game at about 1,500 env steps "
    "per second: its 500,000 steps take 5-10 minutes; the games need the optional minatar "
    "package (pip install -r requirements-minatar.txt).",
}
"""A warning shown before Start for presets whose budget takes far longer than a lesson."""


def lesson_panel(lesson: GuidedLesson, number: int, step: LessonStep) -> None:
    """The lesson's step, its notice, Back / Next / Leave, and the outline of its area."""
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
            # Until the step's run is started, Start is the one primary button.
            type="primary" if current_run() is not None else "secondary",
            disabled=number == len(lesson.steps),
            on_click=go_to_step,
            args=(number + 1,),
        )
        leave.button("Leave the lesson", key="live.leave_lesson", on_click=leave_lesson)
        st.markdown(step.notice)
    if step.highlight:
        st.html(highlight_css(step.highlight))


def main_controls(visible: set[str] | frozenset[str], where: Any = st) -> None:
    """α, β₀ and the scheme above the charts, in ``where`` (those the lesson step leaves
    visible, side by side); while the run is paused, what moving one does."""
    area = where.container(key="live_area_controls")
    shown = [alias for alias in MAIN_CONTROLS if alias in visible]
    for column, alias in zip(area.columns(max(len(shown), 1)), shown, strict=False):
        path = URL_ALIASES[alias]
        config_widget(
            column,
            path,
            None,  # the value is the session state's (`sync_controls`)
            key=f"live.{alias}",
            on_change=on_main_control,
            args=(alias,),
            help=f"{field_help(path)} {RESTARTS}",
        )
    handle = current_run()
    if handle is not None and handle.status == "paused" and visible & set(MAIN_CONTROLS):
        area.caption(
            "Paused: moving a control starts a new run from the seed with the new value, paused "
            "before its first step; this run stays in Saved runs."
        )


def run_buttons(where: Any = st, speed_where: Any = None) -> None:
    """Start or Resume, Pause, Step, Reset in ``where``, the speed beside them (or in
    ``speed_where``), and the stopped runs to go on with."""
    ss = st.session_state
    if speed_where is None:
        buttons = where.columns([1, 1, 1, 1, 3])
    else:  # each as wide as its label, on as many lines as the width takes
        buttons = [where.container(horizontal=True)] * 4
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
        restart(reason="stopped: Reset started the run again from its seed")
        st.rerun()
    if status in (None, "finished", "failed") and (
        long := LONG_PRESETS.get(st.session_state["live.preset"])
    ):
        st.warning(long, icon=":material/schedule:")
    # In a lesson its steps stop and bring back its runs: no box of them under an ended run.
    if handle is None or (has_ended(handle) and current_lesson() is None):
        _resumable_rows(handle)
    (speed_where or buttons[4]).select_slider(
        "Speed",
        list(SPEEDS),
        shown_value("live.speed"),
        key="live.speed",
        on_change=on_speed,
        help="Slow down to watch single updates; full speed for real training. The run keeps "
        "its speed across pages and reloads.",
    )


def _resumable_rows(shown: RunHandle | None) -> None:
    """The browser's stopped runs it can go on with, each with its Resume: under the buttons
    when no run is on screen (a reload, a server restart), folded away under a run that has
    ended (which is on screen after a reload too)."""
    rows = [
        (run_id, text) for run_id, text in resumable_runs() if shown is None or run_id != shown.id
    ]
    if not rows:
        return
    where = (
        st.container()
        if shown is None
        else st.expander(f"Stopped runs to go on with ({len(rows)})")
    )
    for run_id, text in rows:
        about, go_on = where.columns([5, 1], vertical_alignment="center")
        about.caption(plain(text))
        go_on.button(
            "Resume",
            key=f"live.resume_{run_id}",
            on_click=resume_run,
            args=(run_id,),
            help="Go on with this run where it stopped, with its settings",
        )


def settings_form() -> None:
    """The sidebar's run settings: a preset, the form's fields, a prices CSV; Apply restarts."""
    ss = st.session_state
    config = live_config()
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
    values = {path: config_widget(form, path, config.get(path), key=None) for path in FORM_FIELDS}
    if config.agent.network == "recurrent":
        form.markdown("**Recurrent replay**")
        for path in SEQUENCE_FIELDS:
            values[path] = config_widget(form, path, config.get(path), key=None)
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
