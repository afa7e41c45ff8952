"""`rdqn.dashboard.display.steady_chart`: a chart redrawn every second keeps the previous redraw's
figure, unchanged, in its other slot, so that the browser keeps that one drawn (Streamlit names
a chart by a hash of its figure, and the browser mounts a renamed chart anew, blank at first)."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from rdqn.dashboard.display import PAGE_RUN_KEY


def redrawn_chart() -> None:
    """A chart whose figure changes at every run, as a live chart's does."""
    import plotly.graph_objects as go
    import streamlit as st

    from rdqn.dashboard.display import steady_chart

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


def charts_of_a_fragment() -> None:
    """A fragment's steady chart and plain chart, drawn as part of a page run or (with
    ``own_run`` set) as the fragment's own run; and the page's own chart."""
    import plotly.graph_objects as go
    import streamlit as st

    from rdqn.dashboard.display import show_chart, steady_chart
    from rdqn.dashboard.fragments import fragment, page_run

    @fragment()
    def live() -> None:
        steady_chart(st, go.Figure(go.Scatter(y=[1, 2])), name="test", height=200)
        show_chart(st, go.Figure(go.Scatter(y=[3])), key="plain")

    if st.session_state.get("own_run"):
        live()
    else:
        with page_run():
            live()
            show_chart(st, go.Figure(go.Scatter(y=[4])), key="page")


def marks(at: AppTest) -> dict[str, str | None]:
    """Each chart's page-run mark (in its configuration) by its element's key ("test_a",
    "test_b", "plain", "page")."""
    return {
        chart.proto.id.rsplit("-", 1)[-1]: json.loads(chart.proto.config).get(PAGE_RUN_KEY)
        for chart in at.get("plotly_chart")
    }


def test_a_fragment_drawn_in_a_page_run_sends_its_charts_whole() -> None:
    """In a page run every chart of a fragment carries that run's mark, so none is a reference
    to one the browser cached (`rdqn.dashboard.fragments`); the fragment's own runs send the new
    figure unmarked and the other slot's exactly as before; the page's own charts are never
    marked."""
    at = AppTest.from_function(charts_of_a_fragment, default_timeout=30)
    at.run()
    first = marks(at)
    assert first["test_a"] and first["plain"] == first["test_a"] and first["page"] is None
    at.run()  # the same figures, in another page run: a new mark on every one of them
    second = marks(at)
    assert second["test_a"] == second["test_b"] == second["plain"] != first["test_a"]
    before = {chart.proto.id: chart.proto for chart in at.get("plotly_chart")}
    at.session_state["own_run"] = True
    at.run()
    third = marks(at)
    assert third["test_a"] is None and third["plain"] is None  # the new figure, unmarked
    kept = next(c for c in at.get("plotly_chart") if c.proto.id.endswith("_b"))
    assert before[kept.proto.id] == kept.proto  # the other slot: as sent before
    assert not at.exception
