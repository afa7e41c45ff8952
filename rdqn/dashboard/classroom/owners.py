"""A browser's owner: the token its cookie holds, and the owner the server knows it by.

Light on purpose (no Streamlit, no PyTorch): the presence middleware (`presence`) reads the
cookie of every request before any page script runs.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["OWNER_COOKIE", "checked_token", "owner_for"]

OWNER_COOKIE = "rdqn_owner"
"""The cookie that holds a browser's owner token, a `secrets.token_urlsafe(18)` (never in a URL)."""
_TOKEN = re.compile(r"[A-Za-z0-9_-]{24}")


def checked_token(value: object) -> str | None:
    """``value`` if it is a well-formed owner token (exactly 24 URL-safe characters), else None:
    a missing or malformed cookie is replaced by a fresh token, never used."""
    return value if isinstance(value, str) and _TOKEN.fullmatch(value) else None


def owner_for(token: str) -> str:
    """The owner (`rdqn.dashboard.state.Session.owner`) of a browser's token: a hash, so the token
    itself is kept nowhere on the server."""
    return hashlib.sha256(f"rdqn owner {token}".encode()).hexdigest()[:32]
