"""Tests for rdqn.dashboard.text: user text shown as text, and why a run stopped."""

from __future__ import annotations

import math

import pytest

from rdqn.dashboard.text import why_stopped


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        (
            "stopped: replaced by run 0123456789ab (rank, α 0.8, β₀ 0.4)",
            "replaced by run 0123456789ab (rank, α 0.8, β₀ 0.4)",
        ),
        ("stopped; the worker was killed", "the worker was killed"),
        ("nobody watched this run for 120 s", "nobody watched this run for 120 s"),
        (None, "by its owner"),  # a store from before every stop had a reason
        (math.nan, "by its owner"),  # ... as a table (pandas) reads it
        ("", "by its owner"),
    ],
)
def test_why_a_run_stopped_reads_old_stores_too(stored: object, shown: str) -> None:
    """Regression: a run stopped by a slider stored no reason, read back from a table as NaN,
    and the live page crashed on it ('float' object has no attribute 'removeprefix')."""
    assert why_stopped(stored) == shown
