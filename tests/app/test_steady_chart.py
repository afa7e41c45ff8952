"""`dashboard.display.steady_chart`: a chart redrawn every second keeps the previous redraw's
figure, unchanged, in its other slot, so that the browser keeps that one drawn (Streamlit names
a chart by a hash of its figure, and the browser mounts a renamed chart anew, blank at first)."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest


def redrawn_chart() -> None:
    """A chart whose figure changes at every run, as a live chart's does."""
    import plotly.graph_objects as go
    import streamlit as st

    from dashboard.display import steady_chart

    count = st.session_state["redraws"] = st.session_state.get("redraws", 0) + 1
    steady_chart(st, go.Figure(go.Scatter(y=list(range(count)))), name="test", height=200)


def slots(at: AppTest) -> dict[str, tuple[str, list[int]]]:
    """Each slot's element id and the figure's y values, by slot ("a", "b")."""
    found = {}
    for chart in at.get("plotly_chart"):
        slot = chart.proto.id.rsplit("_", 1)[-1]
        found[slot] = (chart.proto.id, json.loads(chart.proto.spec)["data"][0]["y"])
    return found


def test_every_redraw_keeps_the_previous_figure_unchanged_in_the_other_slot() -> None:
    """Run 1 draws slot a; run 2 draws its new figure in b and sends a's again, with the same
    element id; run 3 draws in a and keeps b's. The slot just drawn is the one raised."""
    at = AppTest.from_function(redrawn_chart, default_timeout=30)
    at.run()
    first = slots(at)
    assert list(first) == ["a"] and first["a"][1] == [0]
    at.run()
    second = slots(at)
    assert second["a"] == first["a"]  # the same figure, the same name: kept drawn
    assert second["b"][1] == [0, 1]
    at.run()
    third = slots(at)
    assert third["b"] == second["b"] and third["a"][1] == [0, 1, 2]
    assert third["a"][0] != first["a"][0]  # a new figure, a new name: mounted anew
    raised = [html.proto.body for html in at.get("html") if "z-index" in html.proto.body]
    assert raised and "st-key-steady-test_a" in raised[-1]
    assert not at.exception
