"""rdqn.dashboard.saved_runs: the Saved runs page draws itself anew when a run it lists changes
status, and watches only while one can."""

from __future__ import annotations

from typing import Any

import pytest

from rdqn.dashboard import saved_runs
from tests.dashboard.fragment_calls import call_plainly


class FakeStore:
    def __init__(self, statuses: dict[str, str]) -> None:
        self.now = statuses

    def statuses(self) -> dict[str, str]:
        return dict(self.now)


class FakeStreamlit:
    def __init__(self) -> None:
        self.reruns: list[str] = []

    def rerun(self, *, scope: str) -> None:
        self.reruns.append(scope)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeStreamlit:
    streamlit = FakeStreamlit()
    monkeypatch.setattr(saved_runs, "st", streamlit)
    call_plainly(monkeypatch, saved_runs, "_watch")
    return streamlit


def test_the_page_is_drawn_anew_once_a_listed_status_changes(
    fake: FakeStreamlit, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = {"old": "running", "new": "running", "done": "finished"}
    store = FakeStore(listed)
    monkeypatch.setattr(saved_runs, "store", lambda: store)
    saved_runs._watch(listed)  # the page run, and every tick while nothing changed
    saved_runs._watch(listed)
    assert fake.reruns == []
    store.now = {**listed, "old": "stopped"}  # the run a slider replaced has saved its stop
    saved_runs._watch(listed)
    assert fake.reruns == ["app"]
    store.now = {**listed, "another": "created"}  # a run came
    saved_runs._watch(listed)
    assert fake.reruns == ["app", "app"]


def test_only_a_run_that_can_change_by_itself_is_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    watched: list[dict[str, Any]] = []
    monkeypatch.setattr(saved_runs, "_watch", watched.append)
    saved_runs.redraw_when_a_status_changes({"a": "finished", "b": "stopped", "c": "paused"})
    saved_runs.redraw_when_a_status_changes({})
    assert watched == []
    for status in ("created", "running"):
        saved_runs.redraw_when_a_status_changes({"a": "finished", "b": status})
    assert watched == [{"a": "finished", "b": "created"}, {"a": "finished", "b": "running"}]
