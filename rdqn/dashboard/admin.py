"""Whether this session is the server's admin: it entered ``RDQN_ADMIN_TOKEN`` (the admin box,
`rdqn.dashboard.ownership.admin_box`).

A token of fewer than `MIN_TOKEN_CHARS` characters turns the admin off: guessing is braked per
browser (`rdqn.dashboard.attempts`), but a script that opens a fresh browser for every guess gets
one check per page load, so only a token nobody can guess in any number of page loads keeps the runs
safe. docs/classroom.md's recipe, ``secrets.token_urlsafe(12)``, makes 16 characters, 96 random
bits.
"""

from __future__ import annotations

import hmac
import os

import streamlit as st

__all__ = [
    "ADMIN_TOKEN_ENV",
    "MIN_TOKEN_CHARS",
    "TOKEN_KEY",
    "is_admin",
    "server_token",
    "token_matches",
    "token_too_short",
]

ADMIN_TOKEN_ENV = "RDQN_ADMIN_TOKEN"
MIN_TOKEN_CHARS = 16
TOKEN_KEY = "app.admin_token"
"""The session-state key of the token this session entered (server memory only)."""


def server_token() -> str | None:
    """The server's admin token: ``RDQN_ADMIN_TOKEN`` when it has at least `MIN_TOKEN_CHARS`
    characters; None (no admin) when it is unset or shorter."""
    token = os.environ.get(ADMIN_TOKEN_ENV)
    return token if token and len(token) >= MIN_TOKEN_CHARS else None


def token_too_short() -> bool:
    """Whether ``RDQN_ADMIN_TOKEN`` is set but too short to be used (`server_token`)."""
    return bool(os.environ.get(ADMIN_TOKEN_ENV)) and server_token() is None


def token_matches(entered: str | None, expected: str | None) -> bool:
    """Whether ``entered`` is the admin token (compared in constant time); never without one."""
    if not expected or not entered:
        return False
    return hmac.compare_digest(entered.encode(), expected.encode())


def is_admin() -> bool:
    """Whether this session entered the server's admin token (checked against its current
    value, so changing or unsetting ``RDQN_ADMIN_TOKEN`` ends every admin session)."""
    return token_matches(st.session_state.get(TOKEN_KEY), server_token())
