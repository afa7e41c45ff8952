"""rdqn.dashboard.memories_view: the explorer's table and the memory carried to One update by
hand hold the memory's own numbers."""

from __future__ import annotations

import base64
import dataclasses
import math
import re

import numpy as np
import pytest

from rdqn.dashboard.memories_view import chosen_memory, memory_steps, memory_table, pose_svg
from rdqn.training.memories import memories
from rdqn.training.trainer import Trainer
from tests.run_helpers import tiny


@pytest.fixture(scope="module")
def view():  # noqa: ANN201
    trainer = Trainer(tiny(400))
    while not trainer.done:
        trainer.step()
    return memories(trainer)


def svg(uri: str) -> str:
    assert uri.startswith("data:image/svg+xml;base64,")
    return base64.b64decode(uri.split(",", 1)[1]).decode()


def test_cartpole_picture_draws_the_pole_at_its_angle() -> None:
    drawn = svg(pose_svg("cartpole", np.float32([0.5, 0.2]), 1, False))
    x1, y1, x2, y2 = map(
        float,
        re.search(
            r'<line x1="([\d.]+)" y1="([\d.]+)" x2="([-\d.]+)" y2="([-\d.]+)" stroke="#d4a017"',
            drawn,
        ).groups(),
    )
    assert math.atan2(x2 - x1, y1 - y2) == pytest.approx(0.2, abs=0.01)
    assert x1 == pytest.approx(48 + 0.5 * 16)
    assert "#d62728" not in drawn  # not terminal
    assert "#d62728" in svg(pose_svg("cartpole", np.float32([0.0, 0.2]), 0, True))


def test_row_and_market_pictures() -> None:
    row = svg(pose_svg("row", np.float32([2.0]), 1, False, row_size=5))
    assert row.count("<rect") == 5 and row.count('fill="#c9d8f0"') == 1 and "a=1" in row
    market = svg(pose_svg("market", np.float32([1.0]), 2, False))
    assert "#2ca02c" in market and "#d62728" in market  # long held, short taken


def test_the_table_rows_are_the_lists_memories(view) -> None:  # noqa: ANN001
    for name, rows in view.lists.items():
        table = memory_table(view, name)
        assert table["slot"].tolist() == rows.slots.tolist()
        np.testing.assert_array_equal(table["probability"], rows.probabilities)
        np.testing.assert_array_equal(table["weight"], rows.weights)
        np.testing.assert_array_equal(table["replayed"], rows.replayed)
        np.testing.assert_array_equal(table["td_abs"], np.abs(view.terms[name]["td_error"]))


def test_the_chosen_memory_carries_its_numbers(view) -> None:  # noqa: ANN001
    chosen = chosen_memory(view, "run-1", "top priority", 0)
    rows, terms = view.lists["top priority"], view.terms["top priority"]
    assert chosen.slot == rows.slots[0] and chosen.probability == rows.probabilities[0]
    assert chosen.weight == rows.weights[0] and chosen.td_error == terms["td_error"][0]
    assert chosen.target == pytest.approx(
        chosen.reward + chosen.gamma * (not chosen.terminated) * chosen.next_value
    )
    assert chosen.new_priority == pytest.approx(abs(chosen.td_error) + view.eps)


def test_a_minatar_frame_picture_colours_each_busy_cell() -> None:
    """Cells 0 (code 1) and 55 (code 4) filled, the rest empty: two coloured squares, at
    (23, 2) and (23 + 5*5, 5*4.5 + 2), in the player's colours."""
    pose = np.zeros(100, np.float32)
    pose[0], pose[55] = 1, 4
    drawn = svg(pose_svg("frame", pose, 2, False))
    assert drawn.count("<rect") == 3  # two cells and the frame's border
    assert '<rect x="23" y="2.0" width="5" height="4.5" fill="#1f3b73"/>' in drawn
    assert '<rect x="48" y="24.5" width="5" height="4.5" fill="#2ca02c"/>' in drawn
    assert "a=2" in drawn


@pytest.mark.parametrize(
    ("normalization", "denominator"),
    [("global", r"\max_j"), ("batch", r"\max_{j \in \text{batch}}"), ("none", None)],
)
def test_the_is_weight_step_states_the_run_s_normalisation(
    view,
    normalization: str,
    denominator: str | None,  # noqa: ANN001
) -> None:
    chosen = dataclasses.replace(
        chosen_memory(view, "run-1", "top priority", 0), is_normalization=normalization
    )
    (step,) = [s for s in memory_steps(chosen) if s.name == "IS weight"]
    if denominator is None:
        assert step.formula == r"w_i = (N\,P(i))^{-\beta}"
    else:
        assert denominator in step.formula
