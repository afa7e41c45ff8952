"""The live page's run: start, show, restart, resume, step, and the pace its view redraws at.

A session has one live run on screen (``live.run_id``), started from the page's settings
(`rdqn.dashboard.live_settings`) and owned by the browser (`rdqn.dashboard.state.Session`); the
run it replaced stays on the chart as the dashed overlay. Putting a run on screen has the
controls take its values (`rdqn.dashboard.control_sync`). A reloaded tab shows the browser's run
again; a stopped run goes on where it stopped (`rdqn.runs.resume`).
"""

from __future__ import annotations

import json

import streamlit as st

from rdqn.compare import run_label
from rdqn.config import RunConfig
from rdqn.dashboard.admin import is_admin
from rdqn.dashboard.live_settings import (
    controls_follow,
    current_lesson,
    live_config,
    settings_are,
    use_settings_of,
)
from rdqn.dashboard.params import ParsedParams
from rdqn.dashboard.state import SPEEDS, live_pages, registry, session, store, without_paths
from rdqn.dashboard.text import why_stopped
from rdqn.runs.resume import resume_blocker
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.runs.store import StoreError, default_home, owner_hash
from rdqn.serve.handle import RunHandle
from rdqn.serve.registry import NotOwner, ResumeError, RunRegistry, ServerBusy

__all__ = [
    "FIRST_SNAPSHOT_WAIT_S",
    "REFRESH_S",
    "STARTING_REFRESH_S",
    "STEPPED_AFTER_THE_END",
    "STEP_AFTER_THE_END",
    "browsers_live_run",
    "current_run",
    "has_ended",
    "live_run_id",
    "previous_run_id",
    "refresh_seconds",
    "restart",
    "restore_live_run",
    "resumable_runs",
    "resume_run",
    "run_is_resumable",
    "run_settings",
    "show_run",
    "start_live_run",
    "step_once",
    "store_refused",
    "toggle_training",
    "try_it_myself",
    "wait_for_first_snapshot",
]

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


def current_run() -> RunHandle | None:
    """This session's live run, if the registry still has it."""
    run_id = st.session_state.get("live.run_id")
    return registry().get(run_id) if run_id else None


REFRESH_S = 1.0
"""How often the live page redraws its run (what a watching page costs the server:
docs/performance.md, "Watching sessions")."""
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
    show_run(handle.id, replacing=old)
    return handle


def show_run(run_id: str, *, replacing: RunHandle | None = None, reason: str | None = None) -> None:
    """Make ``run_id`` this session's live run (what its class follows, and in a lesson the run
    its step comes back to); the run shown before (``replacing``, by default the current one)
    stops (with ``reason``, default "the live page went on with run <id>") and stays on the
    chart as the overlay. The page's controls take the run's values (`controls_follow`)."""
    old = replacing if replacing is not None else current_run()
    previous = None
    if old is not None and old.id != run_id:
        if not has_ended(old):  # an ended run (on screen again after a reload) has stopped
            why = reason or f"stopped: the live page went on with run {run_id}"
            registry().stop(old.id, wait=False, owner=session().owner, reason=why)
        previous = old.id
    st.session_state["live.run_id"] = run_id
    live_pages().show(session().owner, run_id, previous=previous)
    controls_follow()
    if (now := current_lesson()) is not None:
        st.session_state["live.lesson_runs"][now[0].run_step(now[1])] = run_id


def previous_run_id() -> str | None:
    """The run this session's live page showed before the one on screen (the dashed overlay)."""
    return live_pages().previous_run(session().owner, st.session_state["live.run_id"])


def shown_run(parsed: ParsedParams) -> tuple[str | None, str | None]:
    """The run the live page shows and the one it replaced (the overlay): the followed class's
    current run (``?follow=``), whichever it is by now; the one run of ``?run=``; or this
    browser's own."""
    if parsed.follow:
        return live_pages().followed(parsed.follow, viewer=session().owner)
    if parsed.run_id is not None:
        return parsed.run_id, None
    return st.session_state["live.run_id"], previous_run_id()


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
    if has_ended(handle) and not settings_are(handle.config):
        return
    use_settings_of(handle.config)
    st.session_state["live.run_id"] = handle.id


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


def live_run_id() -> str | None:
    """The run on this browser's live page, for the pages that show it from elsewhere (Replay
    internals, Sum tree): this session's, or, in a session that has not opened the live page
    (a reload, an address typed), the one the browser's live page showed (`browsers_live_run`)."""
    run_id = st.session_state.get("live.run_id")
    if run_id is None and (handle := browsers_live_run()) is not None:
        run_id = handle.id
    return run_id


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
        start = int(row.resume_env_steps)
        back = (
            f"; it goes on from step {start:,}, its last checkpoint"
            if start < int(row.env_steps)
            else ""
        )
        described.append(
            (
                row.id,
                f"Run {row.id} ({run_label(json.loads(row.config_json))}) stopped after "
                f"{int(row.env_steps):,} steps: {why}{back}",
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
    use_settings_of(handle.config)
    show_run(run_id)


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
    use_settings_of(config)
    for key in ("run", "follow"):
        st.query_params.pop(key, None)

    def fork() -> str | None:
        shown = st.session_state["live.run_id"]
        restart()
        return None if st.session_state["live.run_id"] == shown else st.session_state["live.run_id"]

    mine = live_pages().fork_once(session().owner, run_id, fork)
    if mine is not None and mine != st.session_state["live.run_id"]:
        show_run(mine)  # this browser's fork of the same run, a moment ago
