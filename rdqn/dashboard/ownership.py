"""Who may control a run: the browser that started it, or the server's admin.

The rules, for a classroom where thirty browsers share one server and its links:

- Anyone may watch any run (the live page's ``?run=`` and ``?follow=`` links, Saved runs,
  ``/compare?group=``): those views are read-only and say whose the run is.
- Pausing, stepping, resuming, stopping, restarting or deleting a run is for the browser that
  started it (or resumed it): its sessions share one owner (`rdqn.dashboard.state.session`, an
  ``rdqn_owner`` cookie), so a reload or a second tab keeps control, while any of them is open.
  A run whose browser has gone (every tab closed, the server restarted) or that the command line
  started is nobody's: only the admin may stop or delete it (``python -m rdqn runs delete ID``
  on the server does too), and the live page offers a stopped run to resume only to the browser
  that started it. So no student can wipe another's runs, nor the class's saved runs.
- The admin: whoever runs the server sets ``RDQN_ADMIN_TOKEN``; a session that enters that
  token (the password box on Saved runs; never in a URL) may stop and delete any run, on every
  page, until it leaves admin mode. Without the variable there is no admin. Wrong tokens are
  braked per browser and server-wide (`rdqn.dashboard.attempts.AdminBrake`), never the right token
  from a browser that has not been guessing: students cannot lock the teacher out.

`rdqn.serve.registry.RunRegistry` enforces it (`RunRegistry.may_control`, `NotOwner`); this
module says who the session acts as (`actor`) and draws the admin box (`admin_box`).
"""

from __future__ import annotations

import math

import streamlit as st

from rdqn.dashboard.admin import (
    ADMIN_TOKEN_ENV,
    MIN_TOKEN_CHARS,
    TOKEN_KEY,
    is_admin,
    server_token,
    token_matches,
    token_too_short,
)
from rdqn.dashboard.attempts import AdminBrake
from rdqn.dashboard.state import registry, session

__all__ = [
    "ADMIN_TOKEN_ENV",
    "actor",
    "admin_box",
    "is_admin",
    "may_control",
    "not_yours_note",
    "stop_reason",
    "token_matches",
]

_TOKEN_KEY = TOKEN_KEY
_INPUT_KEY = "app.admin_input"
_OUTCOME_KEY = "app.admin_outcome"  # the last entry: "rejected", seconds to wait, or None


def actor() -> str | None:
    """Whom this session acts as towards the registry: its own id, or None (any run) as admin."""
    return None if is_admin() else session().owner


def may_control(run_id: str) -> bool:
    """Whether this session may pause, stop, restart or delete the run."""
    return registry().may_control(run_id, actor())


def not_yours_note(run_id: str) -> str:
    """Why a run's controls are off for this session: whose the run is."""
    if registry().owner_of(run_id) is not None:
        return (
            "Another session started this run: you can watch it; only the browser that started "
            "it (or the server's admin) can stop or delete it."
        )
    return (
        "No open session owns this run (its tabs were closed, the server restarted, or the "
        "command line started it): only the server's admin can stop or delete it."
    )


def stop_reason(run_id: str) -> str | None:
    """The reason recorded when this session stops a run: None for its own run, else that the
    admin stopped it (what the run's owner then reads on its page)."""
    mine = registry().owner_of(run_id) == session().owner
    return None if mine else "stopped: by the server's admin"


@st.cache_resource(show_spinner=False)
def wrong_tries() -> AdminBrake:
    """The server's count of wrong admin tokens, per browser and in all."""
    return AdminBrake()


def _enter_token() -> None:
    """Check the entered token, unless too many wrong ones came lately; only a right one is
    kept (a wrong one could become right if the server's token were changed to it)."""
    entered = st.session_state.get(_INPUT_KEY) or ""
    st.session_state[_INPUT_KEY] = ""
    st.session_state[_TOKEN_KEY] = None
    tries = wrong_tries()
    browser = session().owner
    wait = tries.wait(browser)
    if wait > 0:
        st.session_state[_OUTCOME_KEY] = wait
    elif token_matches(entered, server_token()):
        st.session_state[_TOKEN_KEY] = entered
        st.session_state[_OUTCOME_KEY] = None
    else:
        tries.record(browser)
        st.session_state[_OUTCOME_KEY] = "rejected"


def _leave_admin() -> None:
    st.session_state[_TOKEN_KEY] = None


def admin_box() -> None:
    """Saved runs' admin box, when the server has an admin token."""
    if token_too_short():
        st.warning(
            f"Admin is off: the server's {ADMIN_TOKEN_ENV} has fewer than {MIN_TOKEN_CHARS} "
            "characters, short enough to guess. Restart the server with a longer one "
            "(docs/classroom.md has a one-liner).",
            icon=":material/key_off:",
        )
        return
    if server_token() is None:
        return
    with st.expander("Admin", icon=":material/admin_panel_settings:", expanded=is_admin()):
        if is_admin():
            st.caption("Admin: this session may stop and delete any run.")
            st.button("Leave admin mode", key="app.admin_leave", on_click=_leave_admin)
            return
        st.text_input(
            "Admin token",
            type="password",
            key=_INPUT_KEY,
            on_change=_enter_token,
            help=f"The server's {ADMIN_TOKEN_ENV}: lets this session stop and delete any run.",
        )
        outcome = st.session_state.get(_OUTCOME_KEY)
        if outcome == "rejected":
            st.error("That is not the admin token.", icon=":material/key_off:")
        elif outcome is not None:
            st.error(
                f"Too many wrong admin tokens from this browser in the last minute: that one "
                f"was not checked. Try again in {math.ceil(outcome)} s.",
                icon=":material/timer:",
            )
