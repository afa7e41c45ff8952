"""Only the browser that started a run controls it; others watch.

Reproduced on the old main: on Saved runs any session could delete another's live run, and
``/compare?group=<someone else's group>`` stopped all of its runs (with "Stop comparison", and
with "Run comparison" too, which stopped the group on show first). The rule
(`rdqn.dashboard.ownership`): a run is controlled (paused, stepped, resumed, stopped, restarted,
deleted) only by its session, or by the admin who entered the server's RDQN_ADMIN_TOKEN.

Restarting a run (moving α, Reset) replaces it in its slot in one step (`RunRegistry.replace`):
at the server's cap another session's queued run cannot take the slot in between.

AppTest sessions in one process share one session id, so "another session" here is a run started
in the registry directly under another owner.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from rdqn.dashboard import ownership
from rdqn.dashboard.attempts import AdminBrake
from rdqn.dashboard.ownership import token_matches
from rdqn.dashboard.state import registry
from rdqn.runs.store import RunStore
from rdqn.serve.registry import NotOwner, RunRegistry, ServerBusy
from tests.app.conftest import isolated_app  # noqa: F401 - autouse: private RDQN_HOME
from tests.run_helpers import tiny, wait_for

APP = str(Path(__file__).resolve().parents[2] / "app.py")
LONG = 1_000_000
OTHER = "someone-else"


@pytest.fixture
def local(tmp_path: Path):  # noqa: ANN201
    """A registry of its own (no Streamlit) over a private store."""
    reg = RunRegistry(RunStore(tmp_path / "own.db"), max_active=2, idle_timeout=None)
    yield reg
    reg.shutdown()


def test_a_session_cannot_control_or_delete_another_sessions_run(local: RunRegistry) -> None:
    run = local.start(tiny(LONG), owner="alice", paused=True)
    for control in (
        lambda: local.pause(run.id, owner="bob"),
        lambda: local.step(run.id, owner="bob"),
        lambda: local.unpause(run.id, owner="bob"),
        lambda: local.stop(run.id, owner="bob"),
        lambda: local.delete(run.id, owner="bob"),
    ):
        with pytest.raises(NotOwner, match=f"run {run.id}: it belongs to another session"):
            control()
    assert run.expected_status == "paused"
    wait_for(lambda: run.status == local.store.get_run(run.id).status == "paused")  # still paused
    assert local.may_control(run.id, "alice") and not local.may_control(run.id, "bob")
    local.stop(run.id, owner="alice")
    with pytest.raises(NotOwner, match="cannot resume run"):
        local.resume(run.id, owner="bob", paused=True)
    local.delete(run.id, owner="alice")
    with pytest.raises(KeyError):
        local.store.get_run(run.id)


def test_a_run_whose_session_ended_is_resumable_by_anyone_deletable_by_the_admin_only(
    local: RunRegistry,
) -> None:
    run = local.start(tiny(LONG), owner="alice", paused=True)
    local.step(run.id, owner="alice")
    wait_for(lambda: run.snapshot() is not None and run.snapshot().env_steps == 1)
    assert local.stop_owner("alice") == 1  # her tab closed
    assert run.join(20) and run.status == "stopped"
    assert local.owner_of(run.id) is None
    with pytest.raises(NotOwner, match="it belongs to no session"):
        local.delete(run.id, owner="bob")
    again = local.resume(run.id, owner="bob", paused=True)  # picks it up: now Bob's
    assert local.owner_of(run.id) == "bob"
    with pytest.raises(NotOwner):
        local.stop(again.id, owner="alice")
    local.delete(run.id)  # owner None: the admin, the command line
    with pytest.raises(KeyError):
        local.store.get_run(run.id)


def test_the_admin_token_is_compared_exactly_and_absent_means_no_admin() -> None:
    assert token_matches("s3cret", "s3cret")
    assert not token_matches("s3cre", "s3cret") and not token_matches("S3CRET", "s3cret")
    assert not token_matches("", "") and not token_matches("anything", None)
    assert not token_matches(None, "s3cret")
    assert token_matches("été", "été")  # non-ASCII tokens too (compared as bytes)


def open_page(page: str, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query)
    at.run()
    at.switch_page(page).run()
    assert not at.exception
    return at


def select_row(at: AppTest, run_id: str) -> None:
    table = at.dataframe[0]
    row = table.value["id"].tolist().index(run_id)
    at.session_state[table.key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    assert not at.exception


def test_saved_runs_cannot_delete_another_sessions_live_run() -> None:
    theirs = registry().start(tiny(LONG), owner=OTHER, paused=True)
    wait_for(lambda: theirs.status == "paused")  # its worker has recorded it
    at = open_page("pages/runs.py")
    select_row(at, theirs.id)
    assert at.checkbox(key=f"runs.sure.{theirs.id}").disabled
    captions = " ".join(c.value for c in at.caption)
    assert "Another session started this run" in captions
    assert "Only the browser that started a run may delete it" in captions  # the rule, shown
    # A forged message ticking the box (it is off) only reaches the registry's refusal.
    at.session_state[f"runs.sure.{theirs.id}"] = True
    at.run()
    at.button(key="runs.delete").click().run()
    assert not at.exception
    assert "belongs to another session" in at.error[0].value
    assert theirs.status == "paused"
    assert RunStore().get_run(theirs.id).status == "paused"


def test_the_admin_token_lets_a_session_delete_any_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RDQN_ADMIN_TOKEN", "teacher-only-token")
    theirs = registry().start(tiny(LONG), owner=OTHER, paused=True)
    wait_for(lambda: theirs.status == "paused")  # its worker has recorded it
    at = open_page("pages/runs.py")
    at.text_input(key="app.admin_input").input("wrong").run()
    assert "not the admin token" in at.error[0].value
    select_row(at, theirs.id)
    assert at.checkbox(key=f"runs.sure.{theirs.id}").disabled

    at.text_input(key="app.admin_input").input("teacher-only-token").run()
    assert not at.exception and not at.error
    assert "may stop and delete any run" in " ".join(c.value for c in at.caption)
    assert "teacher-only-token" not in str(dict(at.query_params))  # never in the URL
    assert not [box for box in at.text_input if box.key == "app.admin_input"]
    at.checkbox(key=f"runs.sure.{theirs.id}").check().run()
    at.button(key="runs.delete").click().run()
    assert not at.exception
    assert theirs.status == "stopped"
    with pytest.raises(KeyError):
        RunStore().get_run(theirs.id)
    at.button(key="app.admin_leave").click().run()
    assert [box for box in at.text_input if box.key == "app.admin_input"]


def test_wrong_admin_tokens_brake_the_guesser_never_the_teacher(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: a student's wrong tokens used to lock the box server-wide, the teacher's right
    token too. Three wrong ones brake that browser; the teacher's browser is checked at once."""
    monkeypatch.setenv("RDQN_ADMIN_TOKEN", "teacher-only-token")
    now = [0.0]
    brake = AdminBrake(per_browser=3, server_wide=30, window=60.0, clock=lambda: now[0])
    monkeypatch.setattr(ownership, "wrong_tries", lambda: brake)
    # Two browsers (AppTest gives every test session one owner, so the box is told which).
    browser = ["student"]
    monkeypatch.setattr(ownership, "session", lambda: SimpleNamespace(owner=browser[0]))
    student, teacher = open_page("pages/runs.py"), open_page("pages/runs.py")
    for _ in range(3):
        student.text_input(key="app.admin_input").input("a guess").run()
        assert "not the admin token" in student.error[0].value
    now[0] = 59.5
    student.text_input(key="app.admin_input").input("teacher-only-token").run()
    assert "Too many wrong admin tokens from this browser" in student.error[0].value
    assert "Try again in 1 s" in student.error[0].value
    assert "may stop and delete any run" not in " ".join(c.value for c in student.caption)
    browser[0] = "teacher"
    teacher.text_input(key="app.admin_input").input("teacher-only-token").run()
    assert not teacher.exception and not teacher.error
    assert "may stop and delete any run" in " ".join(c.value for c in teacher.caption)
    now[0] = 60.0
    browser[0] = "student"
    student.text_input(key="app.admin_input").input("teacher-only-token").run()
    assert not student.error  # a minute on, the student's browser is checked again


def test_without_a_token_set_there_is_no_admin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RDQN_ADMIN_TOKEN", raising=False)
    at = open_page("pages/runs.py")
    assert not at.expander and not at.text_input
    at.session_state["app.admin_token"] = ""  # an empty token is no token
    theirs = registry().start(tiny(LONG), owner=OTHER, paused=True)
    wait_for(lambda: theirs.status == "paused")  # its worker has recorded it
    at.run()
    select_row(at, theirs.id)
    assert at.checkbox(key=f"runs.sure.{theirs.id}").disabled


def test_a_token_short_enough_to_guess_turns_the_admin_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Guessing is braked per browser, but a script opening a fresh browser per guess gets one
    check per page load: a short token is refused outright, and the box says why."""
    monkeypatch.setenv("RDQN_ADMIN_TOKEN", "teacher-1234567")  # 15 characters
    at = open_page("pages/runs.py")
    assert not at.exception and not at.text_input
    (warning,) = at.warning
    assert "Admin is off" in warning.value and "fewer than 16 characters" in warning.value
    at.session_state["app.admin_token"] = "teacher-1234567"  # entered before: no rights either
    theirs = registry().start(tiny(LONG), owner=OTHER, paused=True)
    wait_for(lambda: theirs.status == "paused")  # its worker has recorded it
    at.run()
    select_row(at, theirs.id)
    assert at.checkbox(key=f"runs.sure.{theirs.id}").disabled
    monkeypatch.setenv("RDQN_ADMIN_TOKEN", "teacher-12345678")  # 16: the admin is on
    at.session_state["app.admin_token"] = "teacher-12345678"
    at.run()
    assert not at.warning and not at.checkbox(key=f"runs.sure.{theirs.id}").disabled


def test_another_sessions_comparison_link_is_read_only() -> None:
    handles = registry().enqueue(
        [tiny(LONG, **{"replay.scheme": s}) for s in ("uniform", "rank")],
        owner=OTHER,
        group_id="theirgroup1",
    )
    at = open_page("pages/compare.py", group="theirgroup1")
    assert at.session_state["compare.group"] == [h.id for h in handles]
    assert at.button(key="compare.stop").disabled
    assert any("Another session started this run" in c.value for c in at.caption)
    at.number_input(key="compare.steps.chain-lesson").set_value(100)
    at.number_input(key="compare.seeds").set_value(1)
    at.multiselect(key="compare.schemes").set_value(["uniform"])
    at.button(key="compare.run").click().run()  # my own comparison: theirs goes on
    assert not at.exception
    assert at.session_state["compare.group_id"] != "theirgroup1"
    assert all(h.status not in ("stopped", "finished", "failed") for h in handles)


def test_the_live_page_never_offers_another_browsers_stopped_run() -> None:
    theirs = registry().start(tiny(LONG), owner=OTHER, paused=True)
    registry().stop(theirs.id)  # stopped, still its browser's
    at = open_page("pages/live.py")
    assert not [b for b in at.button if b.key == f"live.resume_{theirs.id}"]
    registry().stop_owner(OTHER)  # that browser's last session ended: still not this one's
    at.run()
    assert not [b for b in at.button if b.key == f"live.resume_{theirs.id}"]


# ------------------------------------------------- restarting at the cap keeps your own slot
def test_replacing_a_training_run_at_the_cap_keeps_its_slot(tmp_path: Path) -> None:
    """Reproduced on the old main: moving α stopped the run first, so at the cap another
    session's queued run took the slot and the new run of the owner waited behind it."""
    reg = RunRegistry(RunStore(tmp_path / "cap.db"), max_active=1, idle_timeout=None)
    try:
        mine = reg.start(tiny(LONG), owner="me", speed=20.0)
        theirs = reg.start(tiny(LONG), owner="them", queue=True)
        assert reg.position(theirs.id) == (1, 1)
        with pytest.raises(NotOwner):
            reg.replace(mine.id, tiny(LONG), owner="them", queue=True)
        assert reg.position(theirs.id) == (1, 1) and mine.expected_status == "running"
        new = reg.replace(mine.id, tiny(LONG, seed=1), owner="me", queue=True, speed=20.0)
        assert new.expected_status == "running" and reg.position(new.id) is None
        assert mine.join(20) and mine.status == "stopped"
        assert reg.position(theirs.id) == (1, 1) and theirs.status == "created"
        assert reg.owner_of(new.id) == "me"
    finally:
        reg.shutdown()


def test_replacing_a_queued_run_keeps_its_place_and_busy_changes_nothing(tmp_path: Path) -> None:
    reg = RunRegistry(RunStore(tmp_path / "cap.db"), max_active=1, idle_timeout=None)
    try:
        first = reg.start(tiny(LONG), owner="them", speed=20.0)
        mine = reg.start(tiny(LONG), owner="me", queue=True)
        later = reg.start(tiny(LONG), owner="them", queue=True)
        with pytest.raises(ServerBusy):
            reg.replace(mine.id, tiny(LONG), owner="me")  # no queueing asked: nothing changes
        assert (reg.position(mine.id), mine.status) == ((1, 2), "created")
        new = reg.replace(mine.id, tiny(LONG, seed=1), owner="me", queue=True)
        assert (reg.position(new.id), reg.position(later.id)) == ((1, 2), (2, 2))
        assert mine.status == "stopped" and first.expected_status == "running"
    finally:
        reg.shutdown()


def test_restarting_on_the_live_page_at_the_cap_keeps_the_slot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RDQN_MAX_RUNS", "1")
    at = open_page("pages/live.py")
    at.session_state["live.overrides"] = {"train.total_steps": LONG}
    at.session_state["live.speed"] = "20 steps/s"
    at.button(key="live.start").click().run()
    first = registry().get(at.session_state["live.run_id"])
    assert first.expected_status == "running"
    theirs = registry().start(tiny(LONG), owner=OTHER, queue=True)
    at.button(key="live.reset").click().run()
    assert not at.exception
    second = registry().get(at.session_state["live.run_id"])
    assert second.id != first.id and second.expected_status == "running"
    assert registry().position(theirs.id) == (1, 1) and theirs.status == "created"
