"""The figures every session shares: one build per key and snapshot, and the same chart."""

from __future__ import annotations

import threading

import numpy as np
import plotly.graph_objects as go
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rdqn.dashboard.shared_figures import FrozenFigure, SharedFigures
from rdqn.figures import reward_curve


def _figure(n: int = 5) -> go.Figure:
    return reward_curve(np.arange(1, n + 1) * 10, np.linspace(0, 100, n), scheme="uniform")


class Snapshot:
    """Stands in for a run's immutable `Telemetry`: compared by identity."""


def test_a_frozen_figure_is_the_plain_figure() -> None:
    plain = _figure()
    frozen = FrozenFigure(plain)
    assert frozen.to_dict() == plain.to_dict()
    assert frozen.to_dict() is frozen.to_dict()  # made once


def test_one_build_per_key_and_snapshot() -> None:
    shared = SharedFigures()
    builds: list[int] = []

    def build() -> go.Figure:
        builds.append(1)
        return _figure()

    first, second = Snapshot(), Snapshot()
    one = shared.get("reward", (first,), build)
    assert shared.get("reward", (first,), build) is one
    assert len(builds) == 1
    assert shared.get("reward", (second,), build) is not one  # a new snapshot: a new figure
    assert shared.get("loss", (first,), build) is not one  # another chart of the same snapshot
    assert len(builds) == 3 and shared.builds == 3


def test_an_identity_is_never_mistaken_for_another_snapshot() -> None:
    shared = SharedFigures()
    snap = Snapshot()
    one = shared.get("reward", (snap,), _figure)
    # The entry pins its snapshot, so the snapshot's id cannot be reused while it is cached.
    del snap
    for _ in range(100):
        assert shared.get("reward", (Snapshot(),), _figure) is not one


def test_the_store_is_bounded_least_recently_used_first() -> None:
    shared = SharedFigures(size=2)
    a, b, c = Snapshot(), Snapshot(), Snapshot()
    fig_a = shared.get("k", (a,), _figure)
    shared.get("k", (b,), _figure)
    assert shared.get("k", (a,), _figure) is fig_a  # a used again: b is now the oldest
    shared.get("k", (c,), _figure)
    assert len(shared) == 2
    assert shared.get("k", (a,), _figure) is fig_a
    assert shared.builds == 3
    shared.get("k", (b,), _figure)  # b was dropped: built again
    assert shared.builds == 4
    with pytest.raises(ValueError, match="size must be at least 1, got 0"):
        SharedFigures(size=0)


def test_sessions_asking_at_once_wait_for_one_build() -> None:
    shared = SharedFigures()
    snap = Snapshot()
    start = threading.Barrier(8)
    got: list[go.Figure] = []

    def ask() -> None:
        start.wait()
        got.append(shared.get("reward", (snap,), _figure))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert shared.builds == 1 and all(fig is got[0] for fig in got)


def test_a_build_under_way_holds_up_no_other_figure() -> None:
    """While one figure builds (slowly: a busy server), a figure already built and another
    figure come back at once; before, every lookup waited for the build under the store's lock
    (a hundred watchers' pages queued behind it)."""
    shared = SharedFigures()
    built_pins = (Snapshot(),)
    built = shared.get("loss", built_pins, _figure)
    snap = Snapshot()
    building, release = threading.Event(), threading.Event()

    def slow() -> go.Figure:
        building.set()
        assert release.wait(30)
        return _figure()

    slow_thread = threading.Thread(target=lambda: shared.get("reward", (snap,), slow))
    slow_thread.start()
    assert building.wait(30)
    try:
        assert shared.get("loss", built_pins, _figure) is built
        other = shared.get("reward", (Snapshot(),), _figure)  # another snapshot's figure
        assert isinstance(other, FrozenFigure) and shared.builds == 2
    finally:
        release.set()
        slow_thread.join(30)
    assert shared.builds == 3


def _draw_both() -> None:
    import numpy as np
    import streamlit as st

    from rdqn.dashboard.shared_figures import FrozenFigure
    from rdqn.figures import reward_curve

    fig = reward_curve(np.arange(1, 41) * 10, np.sin(np.arange(40)), scheme="proportional")
    st.plotly_chart(fig, key="plain")
    st.plotly_chart(FrozenFigure(fig), key="frozen")


def test_streamlit_sends_the_same_chart_for_a_frozen_figure() -> None:
    at = AppTest.from_function(_draw_both).run()
    assert not at.exception
    plain, frozen = (chart.proto.spec for chart in at.get("plotly_chart"))
    assert frozen == plain and len(plain) > 1000


def test_the_shared_store_is_one_per_server() -> None:
    from rdqn.dashboard.display import _shared_figures

    st.cache_resource.clear()
    assert _shared_figures() is _shared_figures()
