"""rdqn.dashboard.chart_code: Home's page run draws no chart; the fragment's first own run draws one
invisible chart, the next ends the timer by rerunning the page, which then calls it no more."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rdqn.dashboard import chart_code
from tests.dashboard.fragment_calls import call_plainly

APP = str(Path(__file__).resolve().parents[2] / "app.py")


class FakeStreamlit:
    """What the module calls of Streamlit, recorded in `calls`."""

    def __init__(self) -> None:
        self.session_state: dict[str, Any] = {}
        self.calls: list[tuple[str, Any]] = []

    @contextlib.contextmanager
    def container(self, *, key: str):  # noqa: ANN201
        self.calls.append(("container", key))
        yield

    def plotly_chart(self, figure: Any, **options: Any) -> None:
        self.calls.append(("chart", (figure.layout.width, figure.layout.height, options)))

    def rerun(self, *, scope: str) -> None:
        self.calls.append(("rerun", scope))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeStreamlit:
    streamlit = FakeStreamlit()
    monkeypatch.setattr(chart_code, "st", streamlit)
    call_plainly(monkeypatch, chart_code, "_invisible_chart")
    return streamlit


def test_the_page_run_draws_nothing_and_the_fragments_runs_draw_once_then_end(
    fake: FakeStreamlit, monkeypatch: pytest.MonkeyPatch
) -> None:
    chart_code.load_chart_code()  # the page run: the page shows first
    assert fake.calls == [] and chart_code.STATE_KEY not in fake.session_state

    chart_code._invisible_chart()  # the timer's first run: one tiny chart, nobody sees it
    assert fake.calls == [
        ("container", chart_code.CONTAINER_KEY),
        ("chart", (10, 10, {"config": {"staticPlot": True}, "width": "content"})),
    ]
    assert fake.session_state[chart_code.STATE_KEY] == chart_code.DRAWN

    chart_code._invisible_chart()  # the next: the page runs again, without the fragment
    assert fake.calls[2:] == [("rerun", "app")]
    assert fake.session_state[chart_code.STATE_KEY] == chart_code.DONE

    called: list[None] = []
    monkeypatch.setattr(chart_code, "_invisible_chart", lambda: called.append(None))
    chart_code.load_chart_code()  # later page runs of the session: no fragment, no timer
    chart_code.load_chart_code()
    assert called == []


def test_homes_own_run_draws_no_chart() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    assert at.get("plotly_chart") == []
    assert chart_code.STATE_KEY not in at.session_state


def test_the_invisible_chart_takes_no_room() -> None:
    from rdqn.dashboard.display import _PAGE_CSS

    rule = f".st-key-{chart_code.CONTAINER_KEY} {{ position: absolute;"
    assert rule in _PAGE_CSS
    assert "opacity: 0" in _PAGE_CSS.split(rule)[1].split("}")[0]
