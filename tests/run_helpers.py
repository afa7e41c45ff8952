"""Helpers shared by the run and registry tests: tiny configs and polling."""

from __future__ import annotations

import threading
import time

from rdqn.presets import preset


def tiny(total_steps: int = 400, **overrides: object):  # noqa: ANN201
    values = {
        "train.total_steps": total_steps,
        "train.learning_starts": 32,
        "replay.capacity": 256,
        "replay.batch_size": 16,
    }
    values.update(overrides)
    return preset("per-notebook").with_overrides(values)


def wait_for(condition, timeout: float = 20.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def rdqn_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rdqn-run-")]
