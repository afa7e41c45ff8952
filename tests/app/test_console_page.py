"""AppTests of the teacher's console: only the admin has it; it lists every student run and its
brakes pause them, stop them (resumable), and end the class."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rdqn.dashboard.console import CLASS_ENDED, STOPPED_BY_THE_TEACHER
from rdqn.dashboard.state import live_pages, registry
from rdqn.runs.resume import resume_blocker
from rdqn.runs.store import RunStore
from tests.run_helpers import tiny, wait_for

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TOKEN = "teacher-console-2026"


@pytest.fixture
def console(monkeypatch: pytest.MonkeyPatch) -> AppTest:
    """The console, open in a session that entered the admin token."""
    monkeypatch.setenv("RDQN_ADMIN_TOKEN", TOKEN)
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["app.admin_token"] = TOKEN
    at.run()
    at.switch_page("pages/console.py").run()
    assert not at.exception
    return at


def students(count: int) -> list:  # noqa: ANN201 - the runs' handles
    runs = [registry().start(tiny(1_000_000), owner=f"student-{k}") for k in range(count)]
    wait_for(lambda: all(run.status == "running" for run in runs), 60)
    return runs


def test_a_session_without_the_admin_token_has_no_console(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RDQN_ADMIN_TOKEN", TOKEN)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    with pytest.raises(Exception, match="console"):  # not a page of a student's navigation
        at.switch_page("pages/console.py").run()


def test_the_console_lists_every_student_run_and_pauses_them(console: AppTest) -> None:
    runs = students(2)
    try:
        console.run()
        (table,) = console.dataframe
        assert set(table.value["run"]) == {run.id for run in runs}
        assert set(table.value["status"]) == {"running"}
        assert "Student runs (2)" in [s.value for s in console.subheader]
        console.button(key="console.pause_all").click().run()
        assert not console.exception
        wait_for(lambda: all(run.status == "paused" for run in runs), 30)
        assert "Paused 2 runs." in console.success[0].value
    finally:
        for run in runs:
            registry().stop(run.id)


def test_stopping_every_student_run_keeps_each_resumable(console: AppTest) -> None:
    runs = students(2)
    console.run()
    console.button(key="console.stop_all").click().run()
    assert not console.exception
    for run in runs:
        assert run.join(30)
        assert (run.status, run.error) == ("stopped", STOPPED_BY_THE_TEACHER)
    with RunStore() as store:
        assert all(resume_blocker(store, run.id) is None for run in runs)
    console.run()
    assert "Student runs (0)" in [s.value for s in console.subheader]


def test_ending_the_class_stops_every_run_and_closes_its_codes(console: AppTest) -> None:
    runs = students(1)
    code = live_pages().class_code("student-0")
    live_pages().show("student-0", runs[0].id)
    console.run()
    console.button(key="console.end_class").click().run()
    assert not console.exception
    assert runs[0].join(30)
    assert (runs[0].status, runs[0].error) == ("stopped", CLASS_ENDED)
    assert not live_pages().has_class(code)
    assert "The class has ended: 1 run stopped (resumable), 1 class code closed." in (
        console.success[0].value
    )
