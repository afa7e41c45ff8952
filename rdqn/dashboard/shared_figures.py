"""Figures built once per run snapshot and shared by every session that draws them.

A class of thirty follows one run, and each of their pages redraws its charts every second.
Building a run's reward and loss figures takes about 10 ms each, and Streamlit turns every
figure it is given into a dict (`plotly.graph_objects.Figure.to_dict`, a deep copy of the data
and of Plotly's template: about 3 ms) before it writes the JSON. Per session that is most of
what a redraw costs the server, and it is the same work thirty times over.

`SharedFigures.get(key, pins, build)` builds the figure once per key and hands every session
the same `FrozenFigure`; the key names what the figure shows (the chart, its options) and
``pins`` are the objects it was built from (a run's immutable `Telemetry` snapshots), which are
compared by identity: a new snapshot is a new figure, the same snapshot is the same figure. The
entries are bounded (least recently used go first), and hold their pins so that an identity is
never reused while its entry lives.

A `FrozenFigure` is an ordinary Plotly figure whose `to_dict` is computed once, when it is
frozen. Drawn through Streamlit's public ``st.plotly_chart`` like any figure: should Streamlit
stop calling ``to_dict``, the chart is the same, only built per session again (a test compares
the chart Streamlit sends for a frozen figure and for the plain one). Nothing may change a
frozen figure: style it before it is frozen.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

__all__ = ["FrozenFigure", "SharedFigures"]

SHARED_FIGURES = 64
"""Figures kept: two charts for each of a class's runs on screen, with room to spare."""


class FrozenFigure(go.Figure):
    """A figure many sessions draw: its dict (what ``st.plotly_chart`` serializes) is made
    once. It must not be changed after it is made."""

    def __init__(self, figure: go.Figure) -> None:
        super().__init__(figure)
        # The dict of the figure as given: a copy's layout keys may come in another order,
        # and the chart's JSON (and the element's id, a hash of it) would differ.
        self._frozen_dict: dict[str, Any] = figure.to_dict()

    def to_dict(self) -> dict[str, Any]:
        """The figure as a dict, made when it was frozen (shared: do not change it)."""
        return self._frozen_dict


@dataclass(frozen=True)
class _Entry:
    pins: tuple[object, ...]
    figure: FrozenFigure


class SharedFigures:
    """A bounded, thread-safe store of frozen figures by key and by the objects they show."""

    def __init__(self, size: int = SHARED_FIGURES) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        self._size = size
        self._entries: OrderedDict[tuple[Hashable, ...], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[tuple[Hashable, ...], threading.Lock] = {}  # slot -> its build's
        self.builds = 0
        """How many figures were built (a figure drawn again from the store is not)."""

    def get(
        self, key: Hashable, pins: Sequence[object], build: Callable[[], go.Figure]
    ) -> FrozenFigure:
        """The frozen figure of ``key`` built from ``pins`` (``build()`` frozen, the first
        time). Sessions that ask for the same figure at once wait for one build; a figure
        already built, or another one, never waits for it (a hundred watchers' pages once
        queued behind one build under the store's lock)."""
        pinned = tuple(pins)
        slot = (key, *(id(pin) for pin in pinned))
        with self._lock:
            if (figure := self._built(slot, pinned)) is not None:
                return figure
            building = self._building.setdefault(slot, threading.Lock())
        with building:
            with self._lock:
                if (figure := self._built(slot, pinned)) is not None:
                    return figure
            figure = FrozenFigure(build())
            with self._lock:
                self.builds += 1
                self._entries[slot] = _Entry(pinned, figure)
                self._entries.move_to_end(slot)
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
                self._building.pop(slot, None)
            return figure

    def _built(self, slot: tuple[Hashable, ...], pinned: tuple[object, ...]) -> FrozenFigure | None:
        """The figure stored for ``slot`` from these very ``pinned`` objects (under the lock)."""
        entry = self._entries.get(slot)
        if entry is None or not all(a is b for a, b in zip(entry.pins, pinned, strict=True)):
            return None
        self._entries.move_to_end(slot)
        return entry.figure

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
