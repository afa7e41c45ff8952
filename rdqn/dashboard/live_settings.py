"""The live page's settings: a preset plus dotted config overrides, and the lesson it is in.

The settings are a `RunConfig` in two parts kept in session state: ``live.preset`` (a preset name)
and ``live.overrides`` (the dotted fields changed on top of it, `rdqn.presets.configure`). The
URL mirrors them and the lesson (`rdqn.dashboard.params`); the widgets are generated from the
config's fields (`rdqn.dashboard.config_widgets`) and show the settings
(`rdqn.dashboard.control_sync`). Moving α, β₀ or the scheme, or applying the settings form,
restarts the run from the same seed (`rdqn.dashboard.live_run`); the old run stays on the chart
as the overlay.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from rdqn.config import RunConfig
from rdqn.dashboard.guided import GuidedLesson, LessonStep
from rdqn.dashboard.lessons import lessons
from rdqn.dashboard.params import DEFAULT_PRESET, URL_ALIASES, to_params
from rdqn.limits import check_limits
from rdqn.presets import configure, preset

__all__ = [
    "controls_follow",
    "current_lesson",
    "current_step",
    "live_config",
    "set_override",
    "set_overrides",
    "settings_are",
    "sync_url",
    "use_defaults",
    "use_settings_of",
    "use_setup",
]


def live_config() -> RunConfig:
    """The live page's settings as a config (`ValueError` naming a field when they conflict)."""
    return configure(st.session_state["live.preset"], st.session_state["live.overrides"])


def set_override(path: str, value: Any) -> None:
    """Change one field (`ValueError` if the settings would conflict)."""
    set_overrides(
        st.session_state["live.preset"], {**st.session_state["live.overrides"], path: value}
    )


def set_overrides(name: str, overrides: Mapping[str, Any]) -> None:
    """Keep the fields the user set (checked together), less those equal to the preset's own:
    derived values (a warm-up capped by a short budget) are recomputed, not remembered.
    Settings past the server's limits (`rdqn.limits`) are refused like conflicting ones."""
    check_limits(configure(name, overrides))
    base = preset(name)
    st.session_state["live.preset"] = name
    st.session_state["live.overrides"] = {
        path: value for path, value in overrides.items() if base.get(path) != value
    }


def use_setup(name: str, overrides: Mapping[str, Any]) -> None:
    """The page's settings become ``name`` plus ``overrides`` (its controls show them)."""
    set_overrides(name, overrides)
    controls_follow()


def use_settings_of(config: RunConfig) -> None:
    """The page's settings become a run's: its preset and what it changed on top of it."""
    name = config.preset or DEFAULT_PRESET
    use_setup(name, config.overrides_from(preset(name)))


def settings_are(config: RunConfig) -> bool:
    """Whether the page's settings are ``config``."""
    try:
        return live_config() == config
    except ValueError:  # settings that conflict are nobody's
        return False


def use_defaults(name: str = DEFAULT_PRESET) -> None:
    """Back to the page's defaults: preset ``name`` (the page's default preset unless given),
    nothing overridden."""
    st.session_state["live.preset"] = name
    st.session_state["live.overrides"] = {}
    controls_follow()


def controls_follow() -> None:
    """The controls take the settings and the run on screen on the next page run
    (`rdqn.dashboard.control_sync.sync_controls`)."""
    st.session_state["live.controls_stale"] = True


def current_lesson() -> tuple[GuidedLesson, int] | None:
    """The lesson this session is in and its step number (a ``?lesson=`` link starts it; it
    lasts the session)."""
    key = st.session_state["live.lesson"]
    lesson = lessons()[0].get(key) if key else None
    if lesson is None:
        return None
    return lesson, min(st.session_state["live.lesson_step"], len(lesson.steps))


def current_step() -> LessonStep | None:
    now = current_lesson()
    return now[0].step(now[1]) if now else None


def sync_url() -> None:
    """Write the settings into the page's URL (`rdqn.dashboard.params.to_params`), dropping the
    names of fields that are back at the preset's values."""
    wanted = to_params(st.session_state["live.preset"], st.session_state["live.overrides"])
    if st.session_state["live.lesson"]:
        wanted["lesson"] = st.session_state["live.lesson"]
    for alias in URL_ALIASES:
        if alias not in wanted and alias in st.query_params:
            del st.query_params[alias]
    st.query_params.update(wanted)
