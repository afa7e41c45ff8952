"""Top-level functions for `map_tasks` tests: workers import them by name."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path


def square(x: int) -> int:
    return x * x


def fail_on_odd(x: int) -> int:
    if x % 2:
        raise ValueError(f"odd item {x}")
    return x


def unpicklable_result(x: int) -> threading.Lock:
    return threading.Lock()


def pid_of_worker(x: int) -> int:
    return os.getpid()


def die_once(marker: str) -> str:
    """Kill this worker the first time (the marker file does not exist yet); succeed after."""
    path = Path(marker)
    if not path.exists():
        path.write_text("died once")
        os.kill(os.getpid(), signal.SIGKILL)
    return "survived"


def always_die(x: int) -> int:
    os.kill(os.getpid(), signal.SIGKILL)
    return x
