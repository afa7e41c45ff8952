"""Suite-wide settings: one torch thread per test process, and how the tests share the cores.

The tiny networks in these tests gain nothing from intra-op threads, and on a busy two-core
machine several processes each spinning two threads slow everything down.

The suite runs in two pytest-xdist workers (``-n 2 --dist loadgroup`` in pyproject.toml): most
tests are CPU-bound in one process, so two workers use both cores. Tests that start servers,
browsers or worker processes and time what they see keep to one worker per group, in order:
the executor tests, and the browser flows (`tests/e2e`, whose servers are module fixtures) in
two groups of about equal length, one per worker, so that neither worker waits on the other.
"""

from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

_ONE_WORKER = {
    "test_browser.py": "browser-a",
    "test_first_load.py": "browser-b",
    "test_run_on_screen.py": "browser-a",
    "test_classroom.py": "browser-b",
    "test_reload.py": "browser-b",
    "test_reliability.py": "browser-b",
    "test_admin.py": "browser-b",
    "test_executors.py": "executors",
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        group = _ONE_WORKER.get(Path(str(item.path)).name)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        elif "e2e" in Path(str(item.path)).parts:
            raise pytest.UsageError(f"{item.path.name}: give the browser flows a group")
