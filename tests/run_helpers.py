"""Helpers shared by the tests: tiny configs, and the one way a test waits.

A test never sleeps for a time: it waits for a state (`wait_for`), with a deadline that only
a broken or badly overloaded machine reaches. Where a test must pass time it does not want to
wait for (a grace period, a debounce), it moves a clock forward instead (`ShiftedTime`).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from rdqn.presets import preset

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[1]


def tiny(total_steps: int = 400, **overrides: object):  # noqa: ANN201
    values = {
        "train.total_steps": total_steps,
        "train.learning_starts": 32,
        "replay.capacity": 256,
        "replay.batch_size": 16,
    }
    values.update(overrides)
    return preset("per-notebook").with_overrides(values)


def wait_for(
    condition: Callable[[], T],
    timeout: float = 20.0,
    *,
    what: str | Callable[[], str] = "condition not met",
    every: float = 0.01,
) -> T:
    """Check ``condition()`` every ``every`` seconds until it returns something truthy, and
    return that. After ``timeout`` seconds, raise `AssertionError` with ``what`` (a text, or a
    function that says what was seen instead). The condition may raise to fail at once (a
    process that died, say). The only place in the tests that sleeps: the pause between two
    checks of a state."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            message = what() if callable(what) else what
            raise AssertionError(f"{message} (after {timeout:g} s)")
        time.sleep(every)


class ShiftedTime:
    """The `time` module, with a monotonic clock that the test moves forward (`skip`).

    Patch it over a module's ``time`` (``monkeypatch.setattr(module, "time", ShiftedTime())``)
    to let that module's deadlines pass at once; real time goes on as well, and every other
    function of `time` is the real one."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.skipped

    def skip(self, seconds: float) -> None:
        self.skipped += seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def rdqn_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rdqn-run-")]


def fresh_python(script: str, *, timeout: float = 300) -> str:
    """The standard output of ``script`` run by a fresh interpreter in the repository: what a
    process that never imported this test session's modules loads (torch, numba, pandas)."""
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
