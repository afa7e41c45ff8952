"""Counting, from what a tab receives over its WebSocket, the references to cached elements
that page runs send into a fragment's part of the page (what could leave a tab white:
`rdqn.dashboard.fragments`).

Streamlit sends an element the browser has cached as a ``ref_hash`` message. A run starts with
a ``new_session`` message naming its fragments (none for a page run); a reference is in a
fragment's part of the page when the block it lands in was drawn by a fragment in that run.
"""

from __future__ import annotations

from playwright.sync_api import WebSocket
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

__all__ = ["CachedReferences"]


class CachedReferences:
    """Counts of the references a tab received: from page runs, from page runs into a
    fragment's part of the page, from fragment runs; and how many page runs there were.
    ``page.on("websocket", counter.watch)`` before the tab opens the dashboard."""

    def __init__(self) -> None:
        self.page_runs = 0
        self.page_run = self.page_run_in_fragments = self.fragment_run = 0
        self._in_page_run = False
        self._block_fragment: dict[tuple[int, ...], str] = {}

    def watch(self, socket: WebSocket) -> None:
        socket.on("framereceived", self.received)

    def received(self, payload: str | bytes) -> None:
        if isinstance(payload, str):
            return
        message = ForwardMsg.FromString(payload)
        kind = message.WhichOneof("type")
        path = tuple(message.metadata.delta_path)
        if kind == "new_session":
            self._in_page_run = not message.metadata.run.fragment_ids
            self.page_runs += self._in_page_run
            self._block_fragment = {}
        elif kind == "delta" and message.delta.WhichOneof("type") == "add_block":
            self._block_fragment[path] = message.delta.fragment_id
        elif kind == "ref_hash" and self._in_page_run:
            self.page_run += 1
            self.page_run_in_fragments += bool(self._block_fragment.get(path[:-1]))
        elif kind == "ref_hash":
            self.fragment_run += 1

    def counts(self) -> dict[str, int]:
        return {
            "page_runs": self.page_runs,
            "page_run_references": self.page_run,
            "page_run_references_in_fragments": self.page_run_in_fragments,
            "fragment_run_references": self.fragment_run,
        }
