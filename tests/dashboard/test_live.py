"""`dashboard.live.refresh_seconds`: the live page redraws fast only while its run starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.live import REFRESH_S, STARTING_REFRESH_S, refresh_seconds
from rdqn.runs.store import RunStore
from rdqn.serve.executors import ThreadExecutor
from rdqn.serve.handle import RunHandle
from rdqn.serve.registry import RunRegistry
from tests.run_helpers import tiny, wait_for


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[RunRegistry]:
    with RunStore(tmp_path / "rdqn.db") as store:
        registry = RunRegistry(store, executor=ThreadExecutor(), max_active=1)
        yield registry
        registry.shutdown()


def test_fast_while_the_run_is_handed_over_and_has_sent_nothing(runs: RunRegistry) -> None:
    assert STARTING_REFRESH_S < REFRESH_S
    starting = RunHandle(tiny(), store=runs.store, executor=ThreadExecutor())  # not started yet
    assert refresh_seconds(starting, runs) == STARTING_REFRESH_S


def test_the_usual_pace_with_no_run_a_training_run_and_a_queued_run(runs: RunRegistry) -> None:
    assert refresh_seconds(None, runs) == REFRESH_S
    training, queued = runs.enqueue([tiny(1_000_000), tiny(1_000_000)])
    wait_for(lambda: training.snapshot() is not None, 60)
    assert refresh_seconds(training, runs) == REFRESH_S
    assert runs.position(queued.id) == (1, 1)
    assert refresh_seconds(queued, runs) == REFRESH_S  # the queue can take minutes
