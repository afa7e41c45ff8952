"""Shared helpers for the replay tests: exact state comparison and a scripted random source."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest


def _assert_same(a: Any, b: Any, path: str) -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict), path
        assert a.keys() == b.keys(), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            _assert_same(a[key], b[key], f"{path}[{key!r}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), path
        assert a.dtype == b.dtype and a.shape == b.shape, (
            f"{path}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        )
        assert np.array_equal(a, b), f"{path} differs"
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{path}[{k}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


@pytest.fixture
def assert_same_state() -> Callable[[Any, Any], None]:
    """Exact, recursive equality of two state dicts (arrays compared by dtype, shape and value)."""
    return lambda a, b: _assert_same(a, b, "state")


class ScriptedUniforms:
    """Stands in for `np.random.Generator` where a sampler only draws uniforms:
    `random(n)` or `random(out=array)`.

    Each call returns the next scripted row, so a stratified draw lands on hand-computed leaves.
    """

    def __init__(self, *rows: Sequence[float]) -> None:
        self._rows = [np.asarray(r, dtype=np.float64) for r in rows]

    def random(self, n: int | None = None, *, out: np.ndarray | None = None) -> np.ndarray:
        row = self._rows.pop(0)
        asked = out.shape[0] if out is not None else n
        assert row.shape == (asked,), f"scripted {row.shape[0]} uniforms, sampler asked for {asked}"
        if out is None:
            return row.copy()
        out[...] = row
        return out


@pytest.fixture
def scripted() -> type[ScriptedUniforms]:
    return ScriptedUniforms
