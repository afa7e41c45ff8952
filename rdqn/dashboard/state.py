"""Streamlit glue shared by the pages: the run store, the run registry and the session's runs.

- `store()` and `registry()` are process-wide (`st.cache_resource`): the registry is the one
  shared object of the app. Runs train outside this process, in the workers of the executor
  RDQN_EXECUTOR names (worker processes by default, Ray for a cluster), so the web server stays
  free to serve pages; at most RDQN_MAX_RUNS train at once (default: what the executor can
  serve, the cores but one for worker processes) and at most RDQN_MAX_PAUSED (default 8) are
  held paused in memory (beyond it the longest-paused run stops, resumable).
- `session()` is session-scoped; its owner is the browser's (a cookie, `OWNER_COOKIE`), shared
  by the browser's tabs and kept over a reload. When a tab goes away Streamlit releases its
  session, and its `on_release` hook stops the owner's runs unless another session of that
  browser is open once the grace period ends (a reload). While any page of the session is open
  its runs are never idle (`keep_session_runs_alive`); with no page open for RDQN_IDLE_TIMEOUT
  seconds (default 120) a run stops itself too, since a closed tab may send no signal.
- `init_state()` is the one place session-state keys get their defaults; every key is named
  ``<page>.<name>`` (live, compare, runs, tree, hand, sweeps), widget keys included.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import streamlit as st

from rdqn.classroom import tree_demo, worked_example
from rdqn.dashboard.admin import is_admin
from rdqn.dashboard.classroom.live_pages import LivePages
from rdqn.dashboard.classroom.owners import OWNER_COOKIE, checked_token, owner_for
from rdqn.dashboard.classroom.presence import PRESENCE
from rdqn.dashboard.classroom.sessions import BrowserSessions
from rdqn.dashboard.fragments import fragment
from rdqn.dashboard.params import DEFAULT_PRESET
from rdqn.dashboard.text import plain
from rdqn.runs.store import RunStore, StoreError, default_home
from rdqn.serve.executors import ExecutorUnavailable, executor_from_env
from rdqn.serve.registry import RunRegistry

if TYPE_CHECKING:
    from rdqn.training.telemetry import Telemetry

__all__ = [
    "SPEEDS",
    "TREE_SEED",
    "Session",
    "OWNER_COOKIE",
    "AWAY_WINDOW_SECONDS",
    "RELEASE_GRACE_SECONDS",
    "checked_token",
    "ensure_app_frame",
    "for_this_viewer",
    "init_state",
    "keep_session_runs_alive",
    "latest_snapshot",
    "live_pages",
    "owner_for",
    "registry",
    "remember_browser",
    "save_upload",
    "session",
    "store",
    "store_failed",
    "upload_name",
]

_log = logging.getLogger(__name__)

TREE_SEED = 2015
"""Seed of the sum-tree page's draws: the same batches in every session, for a class."""


def store() -> RunStore:
    """The run store ($RDQN_HOME/rdqn.db); runs a crashed server left 'running' become 'stopped'.

    A store that cannot be used (a damaged or foreign file, a folder, no permission, a full
    disk) ends the page with one message naming the path and what to do (`store_failed`), never
    a traceback; the next page run tries again, so fixing it needs no server restart."""
    try:
        return _open_store()
    except (StoreError, sqlite3.DatabaseError) as err:
        store_failed(err)


@st.cache_resource(show_spinner=False)
def _open_store() -> RunStore:
    run_store = RunStore()
    run_store.mark_interrupted()
    return run_store


STORE_HELP = (
    "Stop the server, move that file aside (keep it: it may hold runs worth saving) or set "
    "RDQN_HOME to another folder, and start the server again: rdqn then makes a new, empty "
    "store."
)


def store_failed(err: Exception) -> NoReturn:
    """Show why the run store cannot be used and what to do, and end the page run: a
    `StoreError` says it itself; any other SQLite error gets the store's path and `STORE_HELP`.
    The server's paths are for its admin and its log: other sessions (the students) read the
    same message with the run folder named as ``$RDQN_HOME`` and other paths hidden
    (`without_paths`)."""
    if isinstance(err, StoreError):
        text = str(err)
    else:
        path = default_home() / "rdqn.db"
        text = f"the run store {path} cannot be read ({err}). {STORE_HELP}"
    _log.error("The run store cannot be used: %s", text)
    st.error(
        f"The run store cannot be used: {plain(for_this_viewer(text))}", icon=":material/database:"
    )
    st.stop()


def for_this_viewer(text: str) -> str:
    """A server-side message (a store error, a run's error) as this session may read it: whole
    for the admin, else with the run folder written as ``$RDQN_HOME`` and other paths hidden
    (`without_paths`). The server's log keeps the whole message."""
    return text if is_admin() else without_paths(text, default_home())


_SEGMENT = r"[^\s:;,()'\"/]+"
_ABSOLUTE_PATH = re.compile(
    rf"(?<![\w$])/(?:(?:{_SEGMENT}(?: {_SEGMENT})*/)+(?:{_SEGMENT})?|{_SEGMENT})"
)
"""An absolute path: folders whose names may hold single spaces (``/srv/My Class/x``), then a
last name without one (the words after a path are not part of it)."""


def without_paths(text: str, home: Path) -> str:
    """``text`` with the run folder ``home`` written as ``$RDQN_HOME`` and every other absolute
    path as ``[a path on the server]``: what a student is shown of a server-side error."""
    for form in sorted({str(home.resolve()), str(home)}, key=len, reverse=True):
        text = text.replace(form, "$RDQN_HOME")
    return _ABSOLUTE_PATH.sub("[a path on the server]", text)


@st.cache_resource(show_spinner=False)
def registry() -> RunRegistry:
    """The process-wide run registry; closing the server stops its runs and ends its workers."""
    try:
        executor = executor_from_env()
        max_runs = _env_number("RDQN_MAX_RUNS", None, int)
        run_registry = RunRegistry(
            store(),
            executor=executor,
            max_active=max_runs,
            max_paused=_env_number("RDQN_MAX_PAUSED", 8, int),
            idle_timeout=_env_number("RDQN_IDLE_TIMEOUT", 120.0, float),
        )
    except (ValueError, ExecutorUnavailable) as err:
        st.error(f"The server cannot start runs: {plain(err)}", icon=":material/error:")
        st.stop()
    executor.prepare()  # imports and compiled kernels, in the background, before the first run
    return run_registry  # it stops its runs and ends its workers when the server exits


@st.cache_resource(show_spinner=False)
def live_pages() -> LivePages:
    """The run each browser's live page shows, its overlay, and the classes following it."""
    return LivePages()


@st.cache_resource(show_spinner=False)
def browser_sessions() -> BrowserSessions:
    """The open sessions of each browser: once the last has gone (`_release`) and the browser
    has shown no sign of life (`PRESENCE`) for the grace period, its runs pause, and stop unless
    it comes back within the away window."""
    runs = registry()
    return BrowserSessions(
        live_pages(),
        runs.stop_owner,
        grace=_env_number("RDQN_RELEASE_GRACE", RELEASE_GRACE_SECONDS, float),
        quiet_for=PRESENCE.quiet_for,
        pause_owner=runs.pause_owner,
        resume_runs=runs.unpause_runs,
        away=_env_number("RDQN_AWAY_WINDOW", AWAY_WINDOW_SECONDS, float),
    )


def _env_number(name: str, default: Any, kind: type) -> Any:
    """A number from the environment, `ValueError` naming the variable when it is not one."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"{name} must be a {kind.__name__} number, got {raw!r}") from None


@dataclass(frozen=True)
class Session:
    """One browser session; `owner` tags the runs it starts.

    ``owner`` is a hash of the browser's owner token (`OWNER_COOKIE`): every session of one
    browser, its reloads and its other tabs, has the same owner (one person), so a reload keeps
    the runs. ``from_cookie``: the token came from the browser (False: a fresh one, which the
    page hands to the browser, `remember_browser`)."""

    owner: str
    token: str
    from_cookie: bool
    key: str = ""
    """This session's own key (`BrowserSessions`): tabs and reloads of a browser differ."""


OWNER_COOKIE_MAX_AGE = 2 * 24 * 3600
"""Seconds the browser keeps the cookie after its last session began (each session renews it)."""

RELEASE_GRACE_SECONDS = 10.0
"""A browser is away this long after its last session went (``$RDQN_RELEASE_GRACE`` seconds,
else this), unless another session of it is open by then or it was heard from meanwhile
(`PRESENCE`: a page request, an open connection): a reload on a slow network or a loaded laptop
can take several seconds to connect again, and a reload storm runs no page at all while it
lasts. An away browser's runs pause. When the server is shutting down (which releases every
session first), its shutdown stops them sooner, with the true reason."""
AWAY_WINDOW_SECONDS = 600.0
"""An away browser's paused runs train again when it comes back within this many seconds
(``$RDQN_AWAY_WINDOW``, else this; 0: they stop when it goes away), and stop (resumable) after:
a tab closed by mistake, a sleeping laptop or a dropped network costs a student nothing."""


def _browser_token() -> str | None:
    """The owner token the browser sent (`checked_token`)."""
    return checked_token(st.context.cookies.get(OWNER_COOKIE))


def _release(value: Session) -> None:
    """The session went away (its tab was closed or reloaded): after the grace period, stop the
    owner's runs if no other session of it is open and the browser is gone
    (`BrowserSessions.went_away`)."""
    browser_sessions().went_away(value.owner, value.key, "stopped: its browser tab was closed")


@st.cache_resource(scope="session", on_release=_release, show_spinner=False)
def session() -> Session:
    token = _browser_token()
    found = token is not None
    if token is None:
        token = secrets.token_urlsafe(18)
    owner = owner_for(token)
    key = secrets.token_hex(8)
    browser_sessions().attach(owner, key)
    return Session(owner=owner, token=token, from_cookie=found, key=key)


def remember_browser() -> None:
    """Hand the session's owner token to the browser as `OWNER_COOKIE` (which renews it): a
    reload then finds the same owner. A script in a same-origin frame sets it, on every page
    run, so that a run cut short cannot lose it (the frame is the same each time, so the
    browser runs it once); the token never goes into a URL."""
    cookie = (
        f"{OWNER_COOKIE}={session().token}; path=/; max-age={OWNER_COOKIE_MAX_AGE}; SameSite=Strict"
    )
    st.iframe(f"<script>window.parent.document.cookie = {cookie!r};</script>", height=1)


def ensure_app_frame() -> None:
    """Make sure this page runs inside `app.py`; call first thing on every page.

    Because a `pages/` folder exists, a fresh Streamlit server answers the first deep link
    (e.g. a shared `/live?run=...`) in its legacy folder mode: it runs the page file without
    `app.py`, so no page config, no state and the wrong navigation, and a rerun does not leave
    that mode for the open tab. So switch the process to `st.navigation` mode and reload the
    tab: the same URL then goes through `app.py`.
    """
    if st.session_state.get("app.frame"):
        return
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
    st.iframe("<script>window.parent.location.reload()</script>", height=1)
    st.stop()


def _defaults() -> dict[str, Any]:
    """Every session-state key the pages keep, with its default: ``<page>.<name>``."""
    return {
        # Live training: a preset and the dotted config overrides made on top of it.
        "live.preset": DEFAULT_PRESET,
        "live.overrides": {},
        "live.params_loaded": False,
        "live.run_id": None,
        "live.controls_run": None,  # the run whose values the controls show (`sync_controls`)
        "live.controls_stale": True,  # the controls take the settings on the next page run
        "live.replaced": {},  # control key -> (the value it showed before a sync, when)
        "live.replaced_by": {},  # control key -> the value that sync gave it
        "live.error": None,
        "live.smoothing": 0.9,
        "live.lesson": None,  # a key of rdqn.dashboard.lessons.lessons(): kept for the session
        "live.lesson_step": 1,
        "live.lesson_runs": {},  # lesson step number -> the run it started
        "live.restart_due": None,  # monotonic time: a moved slider's restart, once it settles
        "live.came_from_class": None,  # the class code a student forked a run from
        "live.shown_status": (None, None),  # (run id, status) the page's buttons were drawn for
        # Compare schemes: the runs of the comparison on show.
        "compare.group": [],
        "compare.group_id": None,
        # Saved runs: the rows selected in the table, the statuses the filter hides.
        "runs.selected": [],
        "runs.hidden_statuses": [],
        # Sum tree: the priorities (as edited), the draws and their generator.
        "tree.base": tree_demo.default_priorities(8).tolist(),
        "tree.priorities": tree_demo.default_priorities(8).tolist(),
        "tree.editor": 0,
        "tree.rng": np.random.default_rng(TREE_SEED),
        "tree.uniforms": None,
        "tree.tally": None,
        # Sweeps: the heatmap cell whose curves are shown, as (sweep id, cell key).
        "sweeps.cell": None,
        # One update by hand: the table of transitions (as edited).
        "hand.base": worked_example.example_frame(worked_example.default_example()),
        "hand.editor": 0,
    }


_KEYS = tuple(_defaults())


def shown_value(key: str) -> Any:
    """The value a controlled widget shows (what session state holds under ``key``), to pass
    as the widget's default as well.

    Streamlit's browser side mounts some widgets lazily. Where a second page run reaches the
    browser before such a widget has mounted, the widget is built from that run's description,
    which carries only the default (the value travels only with the run that set it), and it
    sends that default back as a change. With Streamlit's own default (a slider's minimum, a
    select box's first option) the live page's first second once turned the demo into an α 0,
    β₀ 0 uniform run at 1 step/s. (Streamlit would log the pairing of a default with a value set
    in session state as a mistake: `.streamlit/config.toml` turns that warning off.)"""
    return st.session_state[key]


def init_state() -> None:
    """Session-state defaults, set once per session."""
    if any(key not in st.session_state for key in _KEYS):
        for key, value in _defaults().items():
            st.session_state.setdefault(key, value)


def keep_session_runs_alive() -> None:
    """Also hands the browser its owner cookie (`remember_browser`).

    A run belongs to its browser session: while any page of the session is open, none of its
    runs is idle (whichever page it is: the by-hand page polls no run). Every page run touches
    them, and so does a small fragment, four times per idle timeout (at most every 20 s), while
    a page sits open."""
    remember_browser()
    owner = session().owner
    registry().touch_owner(owner)
    timeout = registry().idle_timeout
    if timeout:
        fragment(run_every=min(20.0, timeout / 4))(registry().touch_owner)(owner)


def latest_snapshot(run_id: str | None) -> Telemetry | None:
    """The newest snapshot of a run known to the registry (None otherwise)."""
    if not run_id:
        return None
    handle = registry().get(run_id)
    return handle.snapshot() if handle is not None else None


SPEEDS: dict[str, float | None] = {
    "1 step/s": 1.0,
    "5 steps/s": 5.0,
    "20 steps/s": 20.0,
    "100 steps/s": 100.0,
    "1,000 steps/s": 1000.0,
    "full speed": None,
}


UPLOADS_KEEP = 32
"""Uploaded prices CSVs kept at most (the oldest go first), and `UPLOADS_MAX_BYTES` in all."""
UPLOADS_MAX_BYTES = 32 * 2**20
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def save_upload(name: str, data: bytes) -> Path:
    """Keep an uploaded prices CSV, already checked, under $RDQN_HOME/uploads as
    ``<content hash>-<its name>.csv`` (`upload_name` gives the name back), then forget the
    oldest uploads beyond `UPLOADS_KEEP` files or `UPLOADS_MAX_BYTES` (a run that used one can
    then not be resumed; an upload saved again counts as new)."""
    folder = store().path.parent / "uploads"
    folder.mkdir(parents=True, exist_ok=True)
    stem = _UNSAFE_NAME.sub("_", Path(name).stem).strip("._")[:40] or "prices"
    path = folder / f"{hashlib.sha256(data).hexdigest()[:16]}-{stem}.csv"
    path.write_bytes(data)
    _prune_uploads(folder, keep=path)
    return path


def _prune_uploads(folder: Path, *, keep: Path) -> None:
    files = sorted(folder.glob("*.csv"), key=lambda f: f.stat().st_mtime, reverse=True)
    total = 0
    for count, file in enumerate(files, start=1):
        total += file.stat().st_size
        if file != keep and (count > UPLOADS_KEEP or total > UPLOADS_MAX_BYTES):
            file.unlink(missing_ok=True)


def upload_name(path: str | Path) -> str:
    """The name an upload had on the user's machine (`save_upload`): ``prices.csv``."""
    stem = Path(path).stem
    return f"{stem.split('-', 1)[1] if '-' in stem else stem}.csv"
