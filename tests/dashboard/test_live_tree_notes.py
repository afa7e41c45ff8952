"""The Sum tree page's texts on the live run's tree, by scheme and by how full the tree is."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rdqn.dashboard.assets import explanation
from rdqn.dashboard.live_tree_notes import no_tree_note, tree_note


@pytest.mark.parametrize(
    ("scheme", "text"),
    [("rank", "sum_tree_live_rank"), ("uniform", "sum_tree_live_uniform")],
)
def test_a_scheme_without_a_tree_says_why(scheme: str, text: str) -> None:
    assert no_tree_note(SimpleNamespace(scheme=scheme)) == explanation(text)


def test_no_run_yet() -> None:
    assert no_tree_note(None) == explanation("sum_tree_live_none")
    assert "No proportional run" in no_tree_note(None)


def test_a_full_tree_of_a_power_of_two_has_neither_padding_nor_empty_slots() -> None:
    note = tree_note(SimpleNamespace(slots=1024, slots_used=1024, item="transition"))
    assert note.startswith("The tree has 1,024 leaves")
    assert "1,024 slots (one transition each)" in " ".join(note.split())
    assert "pad" not in note and "empty" not in note


def test_padding_and_empty_slots_are_counted() -> None:
    note = " ".join(
        tree_note(SimpleNamespace(slots=10_000, slots_used=2_500, item="sequence")).split()
    )
    assert "16,384 leaves" in note and "10,000 slots (one sequence each)" in note
    assert "the 6,384 padding leaves" in note
    assert "(2,500 of 10,000 so far): 0 until their sequences arrive" in note
