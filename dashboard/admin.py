"""Whether this session is the server's admin: it entered ``RDQN_ADMIN_TOKEN`` (the admin box,
`dashboard.ownership.admin_box`)."""

from __future__ import annotations

import hmac
import os

import streamlit as st

__all__ = ["ADMIN_TOKEN_ENV", "TOKEN_KEY", "is_admin", "token_matches"]

ADMIN_TOKEN_ENV = "RDQN_ADMIN_TOKEN"
TOKEN_KEY = "app.admin_token"
"""The session-state key of the token this session entered (server memory only)."""


def token_matches(entered: str | None, expected: str | None) -> bool:
    """Whether ``entered`` is the admin token (compared in constant time); never without one."""
    if not expected or not entered:
        return False
    return hmac.compare_digest(entered.encode(), expected.encode())


def is_admin() -> bool:
    """Whether this session entered the server's admin token (checked against its current
    value, so changing or unsetting ``RDQN_ADMIN_TOKEN`` ends every admin session)."""
    return token_matches(st.session_state.get(TOKEN_KEY), os.environ.get(ADMIN_TOKEN_ENV))
