"""Suite-wide settings: one torch thread per test process, and how the tests share the cores.

The tiny networks in these tests gain nothing from intra-op threads, and on a busy two-core
machine several processes each spinning two threads slow everything down.

The suite runs in two pytest-xdist workers (``-n 2 --dist loadgroup`` in pyproject.toml): most
tests are CPU-bound in one process, so two workers use both cores. Tests that start servers,
browsers or worker processes and time what they see keep to one worker each, in order: the
browser flows (`tests/e2e`, whose servers are module fixtures) and the executor tests.
"""

from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

_ONE_WORKER = {"e2e": "browser", "test_executors.py": "executors"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.path)).parts
        for part, group in _ONE_WORKER.items():
            if part in parts:
                item.add_marker(pytest.mark.xdist_group(group))
