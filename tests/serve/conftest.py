"""A private run store per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rdqn.runs.store import RunStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "rdqn.db") as s:
        yield s
