"""The live page's main controls and speed between the browser and the run on screen.

Like a controlled input, a control holds no value of its own: it shows the settings and the run
on screen (`sync_controls`), a message that still carries the value it showed before is an echo
and is undone (`moved_by_a_person`), and only a person moving a control restarts a run
(`on_main_control`): at once for the scheme, once the value settles for a slider
(`restart_when_settled`).
"""

from __future__ import annotations

import math
import time

import streamlit as st

from rdqn.dashboard.live_run import current_run, restart
from rdqn.dashboard.live_settings import live_config, set_override
from rdqn.dashboard.params import URL_ALIASES
from rdqn.dashboard.state import SPEEDS, registry, session

__all__ = [
    "ECHO_SECONDS",
    "MAIN_CONTROLS",
    "RESTARTS",
    "SETTLE_SECONDS",
    "echo_undone",
    "moved_by_a_person",
    "on_main_control",
    "on_speed",
    "restart_pending",
    "restart_when_settled",
    "speed_label",
    "sync_controls",
]

MAIN_CONTROLS: tuple[str, ...] = ("alpha", "beta", "scheme")
"""The controls above the charts, by URL name; moving one restarts the run."""
RESTARTS = "A change restarts the run from the seed; the run before stays in *Saved runs*."
"""Said under each main control: moving one replaces the run on screen, even a paused one."""


def sync_controls() -> None:
    """The main controls and the speed show the run on screen: call before drawing them.

    Like a controlled input, a control holds no value of its own. Whatever puts a run on screen
    or changes the page's settings (`rdqn.dashboard.live_settings.controls_follow`: a lesson
    step, Resume, a fork, a restored run, the settings form) has the controls take the
    settings' values and the run's speed here, on the next run of the page, before the widgets
    exist; so does a control that Streamlit forgot while another page was open. Only a person
    moving a control restarts a run (`on_main_control`)."""
    ss = st.session_state
    handle = current_run()
    shown = handle.id if handle is not None else None
    stale = ss["live.controls_stale"] or ss["live.controls_run"] != shown
    config = live_config()
    wanted = {f"live.{alias}": config.get(URL_ALIASES[alias]) for alias in MAIN_CONTROLS}
    if handle is not None:
        wanted["live.speed"] = speed_label(handle.speed)
    for key, value in wanted.items():
        if key not in ss:
            ss[key] = value
        elif stale and ss[key] != value:
            ss["live.replaced"][key] = (ss[key], time.monotonic())
            ss["live.replaced_by"][key] = value
            ss[key] = value
    ss.setdefault("live.speed", speed_label(None))
    ss["live.controls_stale"] = False
    ss["live.controls_run"] = shown
    ss["live.echo_undone"] = False  # the controls are drawn next, with these values


ECHO_SECONDS = 5.0
"""How long after a control took a run's value a message carrying its old value is an echo."""


def moved_by_a_person(key: str) -> bool:
    """Whether control ``key``'s new value came from a person, not an echo: a page refresh that
    left the browser before the control took the run's value (`sync_controls`) carries the old
    one and would otherwise restart the run with it. An echo is undone here (the control takes
    the run's value again, and `echo_undone` asks for the page to be drawn anew, which the
    browser's control then shows); a person who really goes back to the old value within
    `ECHO_SECONDS` moves the control once more."""
    ss = st.session_state
    old, when = ss["live.replaced"].get(key, (None, -math.inf))
    if ss.get(key) == old and time.monotonic() - when < ECHO_SECONDS:
        ss[key] = ss["live.replaced_by"][key]
        ss["live.echo_undone"] = True
        return False
    ss["live.replaced"].pop(key, None)
    return True


def echo_undone() -> bool:
    """Whether an echo was undone since the page was last drawn (`moved_by_a_person`): the page
    must be drawn again for the browser's control to show the run's value."""
    return bool(st.session_state.pop("live.echo_undone", False))


def speed_label(speed: float | None) -> str:
    """The speed control's label for ``speed`` steps/s (the nearest one at or below it)."""
    for label, value in SPEEDS.items():
        if value == speed:
            return label
    slower = [label for label, value in SPEEDS.items() if value is not None and value <= speed]
    return slower[-1] if speed is not None and slower else "full speed"


def on_speed() -> None:
    """The speed control moved: the run on screen takes the speed (and so do the runs this
    page starts next)."""
    if not moved_by_a_person("live.speed"):
        return
    handle = current_run()
    if handle is not None and registry().may_control(handle.id, session().owner):
        handle.set_speed(SPEEDS[st.session_state.get("live.speed", "full speed")])


SLIDERS: frozenset[str] = frozenset({"alpha", "beta"})
SETTLE_SECONDS = 0.8
"""A slider's run restarts once its value has not changed for this long: arrow keys and drags
pass through values the teacher did not mean, and each restart would replace the overlay."""


def on_main_control(alias: str) -> None:
    """Widget callback of a main control: take its value and restart a run that exists, at once
    for the scheme, once the value settles for a slider (`restart_when_settled`). A value the
    settings already hold changes nothing."""
    if not moved_by_a_person(f"live.{alias}"):
        return
    value = st.session_state.get(f"live.{alias}")
    path = URL_ALIASES[alias]
    if value is None or value == live_config().get(path):
        return
    set_override(path, value)
    if current_run() is None:
        return
    if alias in SLIDERS:
        st.session_state["live.restart_due"] = time.monotonic() + SETTLE_SECONDS
    else:
        restart()


def restart_pending() -> bool:
    """Whether a slider moved and its restart waits for the value to settle."""
    return st.session_state["live.restart_due"] is not None


def restart_when_settled() -> bool:
    """Restart the run if a slider's value has settled since it last moved; True if it did."""
    due = st.session_state["live.restart_due"]
    if due is None or time.monotonic() < due:
        return False
    st.session_state["live.restart_due"] = None
    restart()
    return True
