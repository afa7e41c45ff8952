"""Tests for rdqn.runs.processes: a run's process is a pid and a start time, alive or not
(Linux: the start time comes from /proc)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rdqn.runs import processes
from rdqn.runs.processes import process_alive, process_start, this_process
from tests.run_helpers import wait_for


def a_dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_this_process_is_its_pid_and_start_time() -> None:
    pid, start = this_process()
    assert pid == os.getpid()
    assert start is not None and start == process_start(pid) > 0


def test_a_live_process_is_alive_only_with_its_own_start_time() -> None:
    pid, start = this_process()
    assert start is not None
    assert process_alive(pid, start)
    assert process_alive(pid, None)  # a row from before start times were kept: the pid decides
    assert not process_alive(pid, start - 1)  # a dead process whose pid this one took


def test_no_process_and_a_dead_process_are_not_alive() -> None:
    assert not process_alive(None, None)
    assert not process_alive(0, None)
    assert not process_alive(a_dead_pid(), None)


def test_a_killed_process_not_yet_reaped_is_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    try:
        start = process_start(child.pid)
        assert process_alive(child.pid, start)
        os.kill(child.pid, signal.SIGKILL)
        wait_for(lambda: not process_alive(child.pid, start), 10)  # a zombie until waited for
    finally:
        child.kill()
        child.wait()


def test_a_command_name_with_spaces_and_parentheses_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Field 22 counts from after the last ')': the name (field 2) may hold both."""
    fields = ["S", *map(str, range(4, 22)), "987654", "0"]
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "stat").write_text("1 (x) S\n")
    (tmp_path / "77").mkdir()
    (tmp_path / "77" / "stat").write_text(f"77 (evil) name (x) {' '.join(fields)}\n")
    monkeypatch.setattr(processes, "_PROC", tmp_path)
    assert process_start(77) == 987654
    assert process_alive(77, 987654) and not process_alive(77, 1)
    assert process_start(78) is None and not process_alive(78, None)
    (tmp_path / "77" / "stat").write_text(f"77 (z) Z {' '.join(fields[1:])}\n")
    assert not process_alive(77, 987654)
