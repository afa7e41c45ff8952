"""Suite-wide settings: one torch thread per test process, and how the tests share the cores.

The tiny networks in these tests gain nothing from intra-op threads, and on a busy two-core
machine several processes each spinning two threads slow everything down.

The suite runs in two pytest-xdist workers (``-n 2 --dist loadgroup`` in pyproject.toml): most
tests are CPU-bound in one process, so two workers use both cores. Tests that start servers,
browsers or worker processes and time what they see keep to one worker per group, in order:
the executor tests, and the browser flows (`tests/e2e`, whose servers are module fixtures) in
three groups of files, each on one worker at a time (`_ONE_WORKER`).
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from rdqn.serve.executors import ProcessExecutor

torch.set_num_threads(1)

_ONE_WORKER = {
    # Three groups of browser flows, each on one worker, so that at most three run at once.
    "test_run_on_screen.py": "browser-a",
    "test_demo.py": "browser-a",
    "test_sweeps.py": "browser-a",
    "test_experience.py": "browser-a",
    "test_browser.py": "browser-b",
    "test_first_load.py": "browser-b",
    "test_admin.py": "browser-b",
    "test_reliability.py": "browser-b",
    "test_classroom.py": "browser-c",
    "test_reload.py": "browser-c",
    "test_lesson_layout.py": "browser-c",
    "test_experiments.py": "browser-c",
    "test_executors.py": "executors",
    "test_tasks.py": "executors",  # rdqn.sweeps: zygotes and a local Ray, like the executors'
    "test_runner.py": "executors",
}


_SLOW_MODULES = {
    "test_executors.py",  # zygotes, worker processes, a local Ray
    "test_warm_up.py",  # compiles the replay kernels in fresh processes
    "test_interrupts.py",  # real SIGINTs to `python -m rdqn` while it trains
    "test_packaging.py",  # builds and installs the wheel
    "test_replayed_widgets.py",  # a dashboard server and its WebSocket clients
    "test_reload_storm.py",  # the same, 200 page loads
    "test_run_failures.py",  # killed CLI runs, resumed
}
"""Modules marked ``slow``: each test starts processes or servers or trains for seconds.
Browser flows (tests/e2e) are marked ``browser``. The everyday tier leaves both out:
``python -m pytest -m "not browser and not slow"``."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups off the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path))
        if "e2e" in path.parts:
            item.add_marker(pytest.mark.browser)
        if path.name in _SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        group = _ONE_WORKER.get(path.name)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        elif "e2e" in Path(str(item.path)).parts:
            raise pytest.UsageError(f"{item.path.name}: give the browser flows a group")


def pytest_collection_finish(session: pytest.Session) -> None:
    """In a ``--dist loadgroup`` worker, every grouped test must carry its group: pytest-xdist
    adds it to the test's id, and a pytest or xdist that stops doing so (pytest 9.2 with xdist
    3.8 did) would spread a group's tests, and their module's server, over both workers."""
    if not getattr(session.config.option, "loadgroup", False):  # set in xdist workers only
        return
    for item in session.items:
        group = _ONE_WORKER.get(Path(str(item.path)).name)
        if group is not None and not item.nodeid.endswith(f"@{group}"):
            raise pytest.UsageError(
                f"pytest-xdist did not group {item.nodeid} (group {group!r}): pytest "
                f"{pytest.__version__} and this pytest-xdist disagree on test ids"
            )


class _SharedProcessExecutor(ProcessExecutor):
    """The production executor, kept from test to test: a registry's shutdown leaves it open."""

    def close(self) -> None:
        """Kept for the next test (`end`)."""

    def end(self) -> None:
        super().close()


@pytest.fixture(scope="session")
def process_executor() -> Iterator[_SharedProcessExecutor]:
    """Worker processes for the dashboard's AppTests (tests/app/conftest.py), one zygote per
    test process."""
    executor = _SharedProcessExecutor(capacity=4)  # the suite's pages start a few runs at once
    yield executor
    executor.end()
