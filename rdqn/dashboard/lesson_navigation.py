"""Lesson navigation on the live page: enter a lesson, Next / Back between its steps, leave it.

A step shows its controls and its run: the run on screen goes on, or the step's own run comes
back (`rdqn.dashboard.live_run`), or one starts from the step's settings
(`rdqn.dashboard.live_settings`). The lesson and step the session is in are
`rdqn.dashboard.live_settings.current_lesson`; a ``?lesson=`` link enters one
(`load_params_once`).
"""

from __future__ import annotations

import streamlit as st

from rdqn.dashboard.guided import LessonStep
from rdqn.dashboard.lessons import lessons
from rdqn.dashboard.live_run import current_run, restart, resume_run, run_is_resumable, show_run
from rdqn.dashboard.live_settings import current_lesson, set_override, use_settings_of, use_setup
from rdqn.dashboard.params import ParsedParams
from rdqn.dashboard.state import SPEEDS, registry, session
from rdqn.serve.handle import RunHandle

__all__ = ["go_to_step", "leave_lesson", "load_params_once", "start_lesson"]


def start_lesson(key: str) -> None:
    """Enter a lesson at step 1: its settings and controls, no run yet (Start starts it)."""
    lesson = lessons()[0][key]
    st.session_state["live.lesson"] = key
    st.session_state["live.lesson_step"] = 1
    st.session_state["live.lesson_runs"] = {}
    use_setup(*lesson.run_setup(1))
    _use_speed(lesson.step(1))


def go_to_step(number: int) -> None:
    """Next/Back: show step ``number`` with its controls and its run: the step's run (a
    ``start`` step's own, the one a ``restore`` step names, or for a ``keep`` step the one of the
    step it keeps) comes back if the registry still has it, and goes on where it stopped if a
    later step replaced it before it finished (the step's text speaks of a run that trains);
    otherwise a ``keep`` step keeps the run on screen and any other starts one from its
    settings."""
    now = current_lesson()
    if now is None:
        return
    lesson = now[0]
    step = lesson.step(number)
    st.session_state["live.lesson_step"] = number
    if step.speed is not None:
        st.session_state["live.speed"] = step.speed  # the step's run starts at its speed
    kept = st.session_state["live.lesson_runs"].get(lesson.run_step(number))
    handle = registry().get(kept) if kept else None
    if step.run == "keep":
        # Back from a later step that showed another run: the text speaks of this step's run.
        on_screen = current_run()
        if handle is not None and (on_screen is None or on_screen.id != handle.id):
            _bring_back(handle, number)
    elif handle is None:
        use_setup(*lesson.run_setup(number))
        restart(paused=False, reason=f"stopped: lesson step {number} started a new run")
    else:
        _bring_back(handle, number)
    _use_speed(step)


STOPPING_WAIT_S = 10.0
"""How long Back waits for a run a later step is still stopping (it saves its checkpoint) before
it goes on with it."""


def _bring_back(handle: RunHandle, number: int) -> None:
    """Show step ``number``'s run again, going on where it stopped if a later step replaced it
    before it finished: one still stopping (Back right after Next) is waited for first, or it
    would stay stopped on screen."""
    use_settings_of(handle.config)
    show_run(handle.id, reason=f"stopped: lesson step {number} showed run {handle.id}")
    if handle.stopping:
        handle.join(STOPPING_WAIT_S)
    if handle.status == "stopped" and run_is_resumable(handle.id):
        resume_run(handle.id)


def _use_speed(step: LessonStep) -> None:
    """A step's speed, for the run on screen and the runs to come (the control shows it)."""
    if step.speed is None:
        return
    st.session_state["live.speed"] = step.speed
    handle = current_run()
    if handle is not None and registry().may_control(handle.id, session().owner):
        handle.set_speed(SPEEDS[step.speed])


def leave_lesson() -> None:
    st.session_state["live.lesson"] = None
    st.session_state["live.lesson_runs"] = {}
    st.query_params.pop("lesson", None)


def load_params_once(parsed: ParsedParams) -> None:
    """Take the page's settings from the URL, once per session, then a lesson given in it."""
    if not st.session_state["live.params_loaded"]:
        if parsed.preset is not None:
            st.session_state["live.preset"] = parsed.preset
            st.session_state["live.overrides"] = {}
        for path, value in parsed.overrides.items():
            set_override(path, value)
        st.session_state["live.params_loaded"] = True
    if parsed.lesson is not None and parsed.lesson != st.session_state["live.lesson"]:
        start_lesson(parsed.lesson)
