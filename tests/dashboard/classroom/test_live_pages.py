"""Tests for rdqn.dashboard.classroom.live_pages: class codes follow a browser's run and its
overlay; a browser's fork of one run starts one run."""

from __future__ import annotations

import re
import threading
from types import SimpleNamespace

import pytest

from rdqn.dashboard.classroom import live_pages
from rdqn.dashboard.classroom.live_pages import FORK_WINDOW, LivePages
from tests.run_helpers import wait_for


def forks(*run_ids: str) -> tuple[list[str], object]:
    """A fork that starts the given runs in turn, and the list of those it started."""
    started: list[str] = []
    pending = iter(run_ids)

    def fork() -> str:
        started.append(next(pending))
        return started[-1]

    return started, fork


def test_a_second_fork_of_the_same_run_by_the_same_browser_gets_the_first_ones_run() -> None:
    pages = LivePages()
    started, fork = forks("a", "b", "c")
    assert pages.fork_once("student", "teacher-run", fork) == "a"
    assert pages.fork_once("student", "teacher-run", fork) == "a"  # the same click, again
    assert pages.fork_once("student", "other-run", fork) == "b"  # another run: another fork
    assert pages.fork_once("classmate", "teacher-run", fork) == "c"  # another browser
    assert started == ["a", "b", "c"]


def test_a_fork_that_did_not_start_is_not_remembered() -> None:
    pages = LivePages()
    assert pages.fork_once("student", "teacher-run", lambda: None) is None
    assert pages.fork_once("student", "teacher-run", lambda: "a") == "a"


def test_after_the_window_the_same_fork_starts_a_new_run(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(live_pages, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    pages = LivePages()
    started, fork = forks("a", "b")
    assert pages.fork_once("student", "teacher-run", fork) == "a"
    clock[0] += FORK_WINDOW - 0.1
    assert pages.fork_once("student", "teacher-run", fork) == "a"
    clock[0] += 0.2
    assert pages.fork_once("student", "teacher-run", fork) == "b"
    assert started == ["a", "b"]


class WatchedLock:
    """A lock that says when a second thread comes to take it while it is held."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.contended = threading.Event()

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            self.contended.set()
            self._lock.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()


def test_two_sessions_forking_at_once_start_one_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads (two sessions of one browser, or one click handled twice): the second comes
    while the first's run is still being registered and admitted."""
    pages = LivePages()
    forking = WatchedLock()
    monkeypatch.setattr(pages, "_forking", forking)
    started: list[str] = []

    def slow_fork() -> str:
        started.append(f"run-{len(started) + 1}")
        if len(started) == 1:  # registering and admitting the run lasts until the second comes
            forking.contended.wait(timeout=10)
        return started[-1]

    shown: list[str | None] = []
    sessions = [
        threading.Thread(target=lambda: shown.append(pages.fork_once("s", "r", slow_fork)))
        for _ in range(2)
    ]
    sessions[0].start()
    wait_for(lambda: started)  # the first session is forking
    sessions[1].start()
    for session in sessions:
        session.join(30)
    assert forking.contended.is_set()
    assert started == ["run-1"] and shown == ["run-1", "run-1"]


def test_a_class_code_follows_its_browsers_current_run_and_the_one_before() -> None:
    pages = LivePages()
    code = pages.class_code("teacher")
    assert pages.class_code("teacher") == code  # one code per browser
    assert re.fullmatch(r"[A-HJ-NP-Z2-9]{4}", code)
    assert pages.class_code("other") != code
    assert pages.has_class(code) and pages.followed(code) == (None, None)  # no run yet
    pages.show("teacher", "run-1")
    assert pages.followed(code) == ("run-1", None)
    pages.show("teacher", "run-2", previous="run-1")  # the teacher moved alpha
    assert pages.followed(code) == ("run-2", "run-1")  # the students see the dashed run too
    assert pages.previous_run("teacher", "run-2") == "run-1"
    assert pages.previous_run("teacher", "run-1") is None  # only for the run on screen
    pages.show("teacher", "run-2")  # the same run again (a reload): its overlay stays
    assert pages.followed(code) == ("run-2", "run-1")
    pages.show("teacher", "run-3")  # a run put on screen with nothing replaced: no overlay
    assert pages.followed(code) == ("run-3", None)
    pages.forget("teacher")  # the teacher's browser went away
    assert not pages.has_class(code) and pages.followed(code) == (None, None)
    assert pages.followed_run("ZZZZ") is None


def test_the_classes_on_show_are_followed_and_show_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(live_pages, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    pages = LivePages()
    teacher = pages.class_code("teacher")
    pages.class_code("other")
    pages.show("teacher", "run1")
    pages.show("other", "run2")
    assert pages.classes() == []  # nobody follows either yet
    assert pages.followed_run(teacher) == "run1"  # a student looks
    assert pages.classes() == [teacher]
    assert pages.classes(besides="teacher") == []
    clock[0] += 0.01
    assert pages.classes(within=0.02) == [teacher]  # followed 0.01 s ago
    assert pages.classes(within=0.005) == []  # not followed lately
