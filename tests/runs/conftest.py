"""A private run store per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rdqn.runs import checkpoint_chunks
from rdqn.runs.store import RunStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "rdqn.db") as s:
        yield s


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 1 KiB: the tiny runs these tests save keep their replay memory in chunk files,
    as a large run does (`rdqn.runs.checkpoint_chunks`), so every save, resume and damage test
    here goes through them."""
    monkeypatch.setattr(checkpoint_chunks, "CHUNK_BYTES", 1024)
