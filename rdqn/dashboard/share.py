"""Sharing a run with a class: the links students open, and a QR code to open them from a phone.

Two links: ``/live?follow=K7Q2`` always shows the teacher's *current* run (it switches when the
teacher restarts, moves α or changes the scheme), ``/live?run=<id>`` shows one run. Both are
read-only. A class code is four characters that are hard to misread on a projector.
"""

from __future__ import annotations

import functools
import io
import re
from urllib.parse import urlencode, urlsplit

import segno

__all__ = ["CLASS_CODE", "LOOPBACK", "follow_link", "qr_png", "run_link", "server_address"]

CLASS_CODE = re.compile(r"^[A-HJ-NP-Z2-9]{4}$")
"""Four characters from an alphabet without 0/O and 1/I."""


LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
"""Host names that reach only the machine they are typed on."""


def server_address(page_url: str, *, network_host: str | None = None) -> str:
    """``scheme://host:port`` (plus any path prefix before the page) of a page's full URL.

    A teacher who opened the dashboard on the server itself sees ``localhost``, which means
    nothing on a student's laptop: give the machine's network address as ``network_host`` (when
    the server listens on the network) and it replaces a loopback host.
    """
    parts = urlsplit(page_url)
    prefix = parts.path.rsplit("/", 1)[0]
    host = parts.netloc
    if network_host and (parts.hostname or "") in LOOPBACK:
        host = f"{network_host}:{parts.port}" if parts.port else network_host
    return f"{parts.scheme}://{host}{prefix}"


def follow_link(address: str, code: str) -> str:
    """The link that follows a teacher's current run."""
    return f"{address}/live?{urlencode({'follow': code})}"


def run_link(address: str, run_id: str) -> str:
    """The link that watches one run."""
    return f"{address}/live?{urlencode({'run': run_id})}"


@functools.lru_cache(maxsize=256)
def qr_png(text: str, scale: int = 8) -> bytes:
    """A QR code of ``text`` as PNG bytes (medium error correction: survives a dim projector).
    Kept for the class's few addresses: encoding one costs a page run about 5 ms."""
    buffer = io.BytesIO()
    segno.make(text, error="m").save(buffer, kind="png", scale=scale, border=2)
    return buffer.getvalue()
