"""The live page's run and its settings: a preset plus dotted config overrides, and restarts.

The settings are a `RunConfig` in two parts kept in session state: ``live.preset`` (a preset name)
and ``live.overrides`` (the dotted fields changed on top of it, `rdqn.presets.configure`). The
URL mirrors them (`rdqn.dashboard.params`); the widgets are generated from the config's fields
(`rdqn.dashboard.config_widgets`). Moving α, β₀ or the scheme, or applying the settings form,
restarts the run from the same seed; the old run stays on the chart as the overlay.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st
from numpy.typing import NDArray

from rdqn.compare import run_label
from rdqn.config import RunConfig
from rdqn.dashboard.admin import is_admin
from rdqn.dashboard.guided import GuidedLesson, LessonStep
from rdqn.dashboard.lessons import lessons
from rdqn.dashboard.params import DEFAULT_PRESET, URL_ALIASES, ParsedParams, to_params
from rdqn.dashboard.state import (
    SPEEDS,
    live_pages,
    registry,
    save_upload,
    session,
    store,
    upload_name,
    without_paths,
)
from rdqn.dashboard.text import plain, why_stopped
from rdqn.envs import load_prices_csv, make_env
from rdqn.limits import check_limits
from rdqn.presets import configure, preset
from rdqn.runs.resume import resume_blocker
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.runs.store import StoreError, default_home, owner_hash
from rdqn.serve.handle import RunHandle
from rdqn.serve.registry import NotOwner, ResumeError, RunRegistry, ServerBusy

__all__ = [
    "FIRST_SNAPSHOT_WAIT_S",
    "MAIN_CONTROLS",
    "REFRESH_S",
    "RESTARTS",
    "STARTING_REFRESH_S",
    "STEPPED_AFTER_THE_END",
    "STEP_AFTER_THE_END",
    "apply_settings",
    "browsers_live_run",
    "checked_prices",
    "current_lesson",
    "current_step",
    "go_to_step",
    "has_ended",
    "current_run",
    "leave_lesson",
    "live_config",
    "load_params_once",
    "on_main_control",
    "prices_note",
    "refresh_seconds",
    "restart",
    "restart_pending",
    "restart_when_settled",
    "restore_live_run",
    "resumable_runs",
    "resume_run",
    "run_is_resumable",
    "run_settings",
    "toggle_training",
    "start_live_run",
    "step_once",
    "sync_url",
    "try_it_myself",
    "use_defaults",
    "wait_for_first_snapshot",
]

MAIN_CONTROLS: tuple[str, ...] = ("alpha", "beta", "scheme")
"""The controls above the charts, by URL name; moving one restarts the run."""
RESTARTS = "A change restarts the run from the seed; the run before stays in *Saved runs*."
"""Said under each main control: moving one replaces the run on screen, even a paused one."""
SLIDERS: frozenset[str] = frozenset({"alpha", "beta"})
SETTLE_SECONDS = 0.8
"""A slider's run restarts once its value has not changed for this long: arrow keys and drags
pass through values the teacher did not mean, and each restart would replace the overlay."""
UPLOAD_ENV = "rdqn/SyntheticMarket-v0"
STEP_AFTER_THE_END = (
    "The run has ended: Step starts a new run from the seed, paused after one step. The ended "
    "run stays in Saved runs."
)
"""The Step button's help once the run has ended."""
STEPPED_AFTER_THE_END = "Step started a new run from the seed. The ended run is in Saved runs."
"""The toast when Step is pressed then (short enough to show whole)."""


def has_ended(handle: RunHandle | None) -> bool:
    """Whether the page's run is finished, stopped or failed (Start and Step begin anew)."""
    return handle is not None and handle.status in FINAL_STATUSES


def step_once() -> None:
    """Step: one env step of the page's run, then pause. Where no run is running or paused, a
    new paused run of the settings takes that step; after an ended run a toast says so."""
    handle = current_run()
    if handle is None or handle.status not in ("running", "paused"):
        ended = has_ended(handle)
        restart(paused=True)
        handle = current_run()
        if ended:
            st.toast(STEPPED_AFTER_THE_END, icon=":material/fiber_new:")
    if handle is not None:
        registry().step(handle.id, owner=session().owner)


def live_config() -> RunConfig:
    """The live page's settings as a config (`ValueError` naming a field when they conflict)."""
    return configure(st.session_state["live.preset"], st.session_state["live.overrides"])


def set_override(path: str, value: Any) -> None:
    """Change one field (`ValueError` if the settings would conflict)."""
    _set_overrides(
        st.session_state["live.preset"], {**st.session_state["live.overrides"], path: value}
    )


def _set_overrides(name: str, overrides: Mapping[str, Any]) -> None:
    """Keep the fields the user set (checked together), less those equal to the preset's own:
    derived values (a warm-up capped by a short budget) are recomputed, not remembered.
    Settings past the server's limits (`rdqn.limits`) are refused like conflicting ones."""
    check_limits(configure(name, overrides))
    base = preset(name)
    st.session_state["live.preset"] = name
    st.session_state["live.overrides"] = {
        path: value for path, value in overrides.items() if base.get(path) != value
    }


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


def start_lesson(key: str) -> None:
    """Enter a lesson at step 1: its settings and controls, no run yet (Start starts it)."""
    lesson = lessons()[0][key]
    st.session_state["live.lesson"] = key
    st.session_state["live.lesson_step"] = 1
    st.session_state["live.lesson_runs"] = {}
    _use_setup(*lesson.run_setup(1))
    _use_speed(lesson.step(1))


def go_to_step(number: int) -> None:
    """Next/Back: show step ``number`` with its controls and its run: the run on screen goes on
    (``keep``), or the step's run (a ``start`` step's own, or the one a ``restore`` step names)
    comes back if the registry still has it, and goes on where it stopped if a later step
    replaced it before it finished (the step's text speaks of a run that trains), else starts
    from the step's settings."""
    now = current_lesson()
    if now is None:
        return
    lesson = now[0]
    step = lesson.step(number)
    st.session_state["live.lesson_step"] = number
    if step.speed is not None:
        st.session_state["live.speed"] = step.speed  # the step's run starts at its speed
    if step.run != "keep":
        kept = st.session_state["live.lesson_runs"].get(lesson.run_step(number))
        handle = registry().get(kept) if kept else None
        if handle is None:
            _use_setup(*lesson.run_setup(number))
            restart(paused=False, reason=f"stopped: lesson step {number} started a new run")
        else:
            _use_settings_of(handle.config)
            _show_run(handle.id, reason=f"stopped: lesson step {number} showed run {handle.id}")
            if handle.status == "stopped" and run_is_resumable(handle.id):
                resume_run(handle.id)  # a later step replaced it: it goes on where it stopped
    _use_speed(step)


def _use_setup(name: str, overrides: Mapping[str, Any]) -> None:
    """The page's settings become ``name`` plus ``overrides`` (its controls show them)."""
    _set_overrides(name, overrides)
    _controls_follow()


def _use_settings_of(config: RunConfig) -> None:
    """The page's settings become a run's: its preset and what it changed on top of it."""
    name = config.preset or DEFAULT_PRESET
    _use_setup(name, config.overrides_from(preset(name)))


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


def current_run() -> RunHandle | None:
    """This session's live run, if the registry still has it."""
    run_id = st.session_state.get("live.run_id")
    return registry().get(run_id) if run_id else None


REFRESH_S = 1.0
"""How often the live page redraws its run (a watching page costs the server ~1 % of a core)."""
STARTING_REFRESH_S = 0.25
"""How often while this session's run is starting: its first counters are on their way, and the
teacher who pressed Start sees them at once, not at the next second."""


def refresh_seconds(handle: RunHandle | None, runs: RunRegistry) -> float:
    """How often the live page's view of run ``handle`` redraws: `STARTING_REFRESH_S` while
    the run has been handed to a worker and has sent nothing yet (not while it waits in the
    queue of ``runs``, which can take minutes), `REFRESH_S` otherwise. The page runs again in
    full when the run starts (its status changes), and takes the slower pace then."""
    starting = (
        handle is not None
        and handle.status == "created"
        and handle.snapshot(touch=False) is None
        and runs.position(handle.id) is None
    )
    return STARTING_REFRESH_S if starting else REFRESH_S


FIRST_SNAPSHOT_WAIT_S = 0.5
"""How long Home's *Start demo* waits for its run's first snapshot on warm workers (a worker
forks from the warm zygote and reports within a few tenths of a second)."""


def wait_for_first_snapshot(handle: RunHandle | None, runs: RunRegistry) -> None:
    """Right after Home's *Start demo*, wait (`FIRST_SNAPSHOT_WAIT_S` at most) for the run to
    send its first snapshot before the live page opens, so that its first page run draws the
    run's counters and its running state, rather than "starting" and then the counters a
    refresh (and a full rerun for the new status) later. Not while ``runs``' workers still warm
    up (seconds on a fresh server: the live page says so meanwhile) nor for a run that waits in
    the queue. Home stays as it is meanwhile; on the live page itself a wait would leave the
    page half redrawn (its top new, the rest stale) for that long."""
    if handle is None or handle.status != "created":  # a run that has reported: no wait
        return
    if runs.warm_up_progress().ready:
        handle.wait_for_snapshot(FIRST_SNAPSHOT_WAIT_S)


def start_live_run(
    config: RunConfig, *, paused: bool = False, reason: str | None = None
) -> RunHandle:
    """Replace this session's live run with a new one; the old one becomes the overlay and is
    stopped with ``reason`` (default: "replaced by run <id> (<its settings>)").

    The new run takes the old one's training slot (or its place in the queue) at once
    (`RunRegistry.replace`): at the server's cap no other session's queued run can take it in
    between. Without a slot the new run waits in the queue and starts by itself when one frees
    (the live view shows its place). A session with no run of its own yet (a reloaded tab, Home
    after a reload) replaces the browser's live run (`browsers_live_run`): it must not wait in
    the queue for that run's grace period to end.
    """
    st.session_state["live.restart_due"] = None
    old = current_run() or browsers_live_run()
    handle = registry().replace(
        old.id if old is not None else None,
        config,
        owner=session().owner,
        paused=paused,
        queue=True,
        speed=SPEEDS[st.session_state.get("live.speed", "full speed")],
        reason=reason,
    )
    _show_run(handle.id, replacing=old)
    return handle


def _show_run(
    run_id: str, *, replacing: RunHandle | None = None, reason: str | None = None
) -> None:
    """Make ``run_id`` this session's live run (what its class follows, and in a lesson the run
    its step comes back to); the run shown before (``replacing``, by default the current one)
    stops (with ``reason``, default "the live page went on with run <id>") and stays on the
    chart as the overlay. The page's controls take the run's values (`sync_controls`)."""
    old = replacing if replacing is not None else current_run()
    previous = None
    if old is not None and old.id != run_id:
        if not has_ended(old):  # an ended run (on screen again after a reload) has stopped
            why = reason or f"stopped: the live page went on with run {run_id}"
            registry().stop(old.id, wait=False, owner=session().owner, reason=why)
        previous = old.id
    st.session_state["live.run_id"] = run_id
    live_pages().show(session().owner, run_id, previous=previous)
    _controls_follow()
    if (now := current_lesson()) is not None:
        st.session_state["live.lesson_runs"][now[0].run_step(now[1])] = run_id


def previous_run_id() -> str | None:
    """The run this session's live page showed before the one on screen (the dashed overlay)."""
    return live_pages().previous_run(session().owner, st.session_state["live.run_id"])


def restore_live_run() -> None:
    """A reloaded page (a new session of the same browser, `rdqn.dashboard.state.Session`) shows the
    run the browser had on its live page again, with its settings and speed: one that goes on
    (running, paused, or queued with its place), and one that has ended (finished, failed or
    stopped, with its curves, as the page showed it before the reload) where the page's address
    asks for its settings: a reload keeps the address the page wrote for it (`sync_url`), while
    a link to other settings opens a page for those. Once per session, before the page draws
    its controls."""
    if st.session_state["live.run_id"] is not None or (handle := browsers_live_run()) is None:
        return
    if has_ended(handle) and not _settings_are(handle.config):
        return
    _use_settings_of(handle.config)
    st.session_state["live.run_id"] = handle.id


def _settings_are(config: RunConfig) -> bool:
    """Whether the page's settings are ``config``."""
    try:
        return live_config() == config
    except ValueError:  # settings that conflict are nobody's
        return False


def browsers_live_run() -> RunHandle | None:
    """The run this browser showed on its live page, in another session (a tab reloaded, or
    another tab), while the server still has it (an ended run too, among its last few) and it
    is the browser's own; None for a session whose browser sent no cookie (a new owner:
    nothing of an earlier session is its own)."""
    if not session().from_cookie:
        return None
    run_id = live_pages().live_run(session().owner)
    handle = registry().get(run_id) if run_id else None
    if handle is None or handle.owner != session().owner:
        return None
    return handle


def sync_controls() -> None:
    """The main controls and the speed show the run on screen: call before drawing them.

    Like a controlled input, a control holds no value of its own. Whatever puts a run on screen
    or changes the page's settings (`_controls_follow`: a lesson step, Resume, a fork, a
    restored run, the settings form) has the controls take the settings' values and the run's
    speed here, on the next run of the page, before the widgets exist; so does a control that
    Streamlit forgot while another page was open. Only a person moving a control restarts a
    run (`on_main_control`)."""
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


def _controls_follow() -> None:
    """The controls take the settings and the run on screen on the next page run
    (`sync_controls`)."""
    st.session_state["live.controls_stale"] = True


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


def run_is_resumable(run_id: str) -> bool:
    """Whether a stopped run can go on where it stopped (`rdqn.runs.resume`)."""
    return resume_blocker(store(), run_id) is None


def resumable_runs(limit: int = 5) -> list[tuple[str, str]]:
    """The newest stopped runs this browser started or resumed and can go on with where they
    stopped, as (run id, description): what a teacher finds after a server restart (or a closed
    tab) to pick up again. Only this browser's runs (the store keeps a hash of their owner):
    others' runs and the command line's are never offered."""
    stopped = store().list_runs(status="stopped")
    stopped = stopped[stopped["resume_env_steps"].notna()]
    stopped = stopped[stopped["owner_hash"] == owner_hash(session().owner)]
    stopped = stopped.head(limit)
    described = []
    for row in stopped.itertuples():
        why = why_stopped(row.error)
        described.append(
            (
                row.id,
                f"Run {row.id} ({run_label(json.loads(row.config_json))}) stopped after "
                f"{int(row.env_steps):,} steps: {why}",
            )
        )
    return described


def resume_run(run_id: str) -> None:
    """Go on with a stopped run under its id, as this session's live run (queued at the cap):
    the page's settings become the run's."""
    try:
        handle = registry().resume(
            run_id,
            owner=session().owner,
            queue=True,
            speed=SPEEDS[st.session_state.get("live.speed", "full speed")],
        )
    except (ResumeError, ServerBusy, NotOwner) as err:
        st.session_state["live.error"] = str(err)
        return
    except StoreError as err:
        st.session_state["live.error"] = store_refused(err)
        return
    st.session_state["live.error"] = None
    _use_settings_of(handle.config)
    _show_run(run_id)


def toggle_training() -> None:
    """The Start/Resume button: resume a paused run (when a training slot is free, else it
    waits for one), go on with a stopped run that can, or start a fresh run."""
    handle = current_run()
    status = handle.status if handle is not None else None
    if status == "paused":
        registry().unpause(handle.id, owner=session().owner)
    elif status == "stopped" and run_is_resumable(handle.id):
        resume_run(handle.id)
    elif status not in ("running", "created"):
        # The button is disabled for a run that trains or waits; a click that still arrives is
        # one Streamlit replayed into a rerun that interrupted the first: the run it started goes
        # on, a second one would replace it.
        restart()


def restart(paused: bool | None = None, *, reason: str | None = None) -> None:
    """Start a fresh run of the current settings from the same seed (paused like the old one,
    unless ``paused`` says otherwise); the old run stops with ``reason`` (`start_live_run`)."""
    try:
        config = live_config()
    except ValueError as err:
        st.session_state["live.error"] = str(err)
        return
    st.session_state["live.error"] = None
    if paused is None:
        handle = current_run()
        paused = handle is not None and handle.status == "paused"
    try:
        start_live_run(config, paused=paused, reason=reason)
    except StoreError as err:  # nothing started, the run on screen goes on
        st.session_state["live.error"] = store_refused(err)


def store_refused(err: StoreError) -> str:
    """What the page says when the store cannot record a run (read-only, a full disk): one
    line, the server's paths for its admin only (as `rdqn.dashboard.state.store_failed`). Buttons
    such as Try this setup myself and Resume run as callbacks, outside the app frame that
    shows a failed store's message on every page: unhandled, theirs was a bare "error"."""
    text = str(err) if is_admin() else without_paths(str(err), default_home())
    return f"No run can be started: {text}"


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


def apply_settings(
    preset_name: str,
    values: Mapping[str, Any],
    *,
    preset_defaults: bool,
    upload: tuple[str, bytes] | None,
) -> None:
    """The settings form's Apply: switch preset, keeping the changes made so far and the fields
    edited in the form (or, with ``preset_defaults``, nothing), take an uploaded prices CSV
    (``(file name, bytes)``), then restart. Nothing changes, and nothing restarts, when the
    result would not be a valid run or the upload is rejected (``live.error`` says why).
    Without an upload the market simulates its prices (the live view says which it uses)."""
    current = live_config()
    edited = {path: value for path, value in values.items() if current.get(path) != value}
    kept = {} if preset_defaults else dict(st.session_state["live.overrides"])
    kept.pop("env.kwargs", None)  # an uploaded CSV is used only while it is in the form
    overrides = {**kept, **({} if preset_defaults else edited)}
    try:
        env_id = configure(preset_name, overrides).env.id
        if upload is not None:
            if env_id != UPLOAD_ENV:
                raise ValueError(
                    f"prices CSV {upload[0]!r} not used: prices are for {UPLOAD_ENV} only; "
                    "choose it as the environment, or remove the file"
                )
            overrides["env.kwargs"] = {"prices_csv": str(_checked_upload(*upload))}
        _set_overrides(preset_name, overrides)
    except ValueError as err:
        st.session_state["live.error"] = str(err)
        return
    _controls_follow()
    restart()


def checked_prices(name: str, data: bytes) -> NDArray[np.float64]:
    """The prices of an uploaded CSV if the market can be built from them; `ValueError` saying
    what is wrong (not UTF-8 text, not a prices CSV, beyond the server's CSV limits, too short
    for an episode) otherwise. Read from the bytes, at a cost bounded before parsing
    (`rdqn.envs.read_prices_csv`)."""
    try:
        prices = load_prices_csv(data)
        make_env(UPLOAD_ENV, prices=prices).close()
    except ValueError as err:
        raise ValueError(f"prices CSV {name!r} rejected: {err}") from err
    return prices


def _checked_upload(name: str, data: bytes) -> Path:
    """Check an uploaded prices CSV (`checked_prices`), then keep it (`save_upload`): a
    rejected upload is never written."""
    checked_prices(name, data)
    return save_upload(name, data)


def prices_note(config: RunConfig) -> str | None:
    """Which prices a market run trains on: an uploaded file's, or simulated ones (None for
    other environments)."""
    if config.env.id != UPLOAD_ENV:
        return None
    path = config.env.kwargs.get("prices_csv")
    if path:
        return f"Prices: uploaded file {plain(upload_name(path))}."
    return f"Prices: simulated (a seeded price process, seed {config.seed}); no file uploaded."


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


def run_settings(run_id: str) -> RunConfig | None:
    """The settings of run `run_id`, training here or saved in the store; None when this server
    has no such run (a mistyped link, a deleted run) or its stored settings are not a valid
    config (written by hand, or by another version)."""
    handle = registry().get(run_id)
    if handle is not None:
        return handle.config
    try:
        return RunConfig.from_dict(store().get_run(run_id).config)
    except (KeyError, ValueError):
        return None


def try_it_myself(follow: str | None, run_id: str | None) -> None:
    """Start this session's own run from the settings of the run it watches (the class's
    current run at the time of the click when following), subject to the cap, leaving the
    read-only view."""
    if follow is not None:
        run_id = live_pages().followed_run(follow)
        st.session_state["live.came_from_class"] = follow  # to watch again while queued
    if run_id is None:
        return
    config = run_settings(run_id)
    if config is None:  # deleted since the page showed it
        st.toast(f"Run {run_id} is no longer on this server: there is no setup to copy.")
        return
    _use_settings_of(config)
    for key in ("run", "follow"):
        st.query_params.pop(key, None)

    def fork() -> str | None:
        shown = st.session_state["live.run_id"]
        restart()
        return None if st.session_state["live.run_id"] == shown else st.session_state["live.run_id"]

    mine = live_pages().fork_once(session().owner, run_id, fork)
    if mine is not None and mine != st.session_state["live.run_id"]:
        _show_run(mine)  # this browser's fork of the same run, a moment ago


def use_defaults(name: str = DEFAULT_PRESET) -> None:
    """Back to the page's defaults: preset ``name`` (the page's default preset unless given),
    nothing overridden."""
    st.session_state["live.preset"] = name
    st.session_state["live.overrides"] = {}
    _controls_follow()
