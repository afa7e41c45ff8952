"""`map_tasks`: a parallel map on forked worker processes and on a real local Ray.

Each call of these tests starts a zygote (it warms up in seconds) or a Ray instance, so the
checks are grouped into few calls.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rdqn.serve.executors import ExecutorUnavailable
from rdqn.sweeps import TaskError, WorkerLost, map_tasks
from tests.sweeps import task_helpers as helpers

pytestmark = pytest.mark.slow


def test_every_item_comes_back_with_its_result_or_its_own_exception() -> None:
    outcomes = dict(map_tasks(helpers.fail_on_odd, range(6), workers=2))
    assert set(outcomes) == set(range(6))
    assert {k: v for k, v in outcomes.items() if k % 2 == 0} == {0: 0, 2: 2, 4: 4}
    for k in (1, 3, 5):
        error = outcomes[k]
        assert isinstance(error, ValueError) and str(error) == f"odd item {k}"
        assert any("in worker process" in note for note in error.__notes__)


def test_calls_run_in_forked_workers_one_process_each() -> None:
    pids = [pid for _, pid in map_tasks(helpers.pid_of_worker, range(4), workers=2)]
    assert os.getpid() not in pids
    assert len(set(pids)) == 4  # a fresh fork per call: no state carried from call to call


def test_a_result_that_cannot_be_pickled_is_a_task_error() -> None:
    [(item, outcome)] = list(map_tasks(helpers.unpicklable_result, [7], workers=1))
    assert item == 7
    assert isinstance(outcome, TaskError) and "pickle" in str(outcome)


def test_a_killed_worker_is_retried_once_then_reported_lost(tmp_path: Path) -> None:
    marker = str(tmp_path / "died")
    assert list(map_tasks(helpers.die_once, [marker], workers=1)) == [(marker, "survived")]
    [(item, outcome)] = list(map_tasks(helpers.always_die, [3], workers=1, retries=1))
    assert item == 3 and isinstance(outcome, WorkerLost)
    assert "killed by signal 9" in str(outcome) and "2 tries" in str(outcome)


def test_a_lambda_is_refused_before_any_work() -> None:
    with pytest.raises(ValueError, match="top-level function"):
        map_tasks(lambda x: x, [1])
    with pytest.raises(ValueError, match="workers must be"):
        map_tasks(helpers.square, [1], workers=0)


def test_without_ray_installed_the_message_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    with pytest.raises(ExecutorUnavailable, match=r"pip install -r requirements-ray.txt"):
        map_tasks(helpers.square, [1], ray="local")


def test_on_a_local_ray_every_item_comes_back() -> None:
    outcomes = dict(map_tasks(helpers.fail_on_odd, range(4), workers=2, ray="local"))
    assert outcomes[0] == 0 and outcomes[2] == 2
    assert isinstance(outcomes[1], ValueError) and "odd item 1" in str(outcomes[1])
    assert isinstance(outcomes[3], ValueError)
