"""rdqn.classroom.worked_example: the update by hand checked against arithmetic written out here.

The default example (gamma 0.99, alpha 0.6, beta 0.4, eps 0.01, Huber)::

    row  r   terminated  Q(s,a)  max Q'(s')  priority | y                     delta
    1    1   no          2.0     2.5         0.6      | 1 + .99 * 2.5 = 3.475 3.475 - 2.0 =  1.475
    2    1   yes         0.5     3.0         1.2      | 1 (terminal)          1 - 0.5     =  0.5
    3    0   no          1.2     1.0         0.3      | 0 + .99 * 1 = .99     .99 - 1.2   = -0.21
    4   -1   no          0.8     0.2         0.9      | -1 + .99 * .2 = -.802 -.802 - .8  = -1.602
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rdqn.classroom import worked_example as we

# Current masses p^0.6 of priorities (0.6, 1.2, 0.3, 0.9): about (0.7360, 1.1156, 0.4856, 0.9387).
MASSES = [0.6**0.6, 1.2**0.6, 0.3**0.6, 0.9**0.6]
TOTAL = MASSES[0] + MASSES[1] + MASSES[2] + MASSES[3]  # about 3.2760
P = [m / TOTAL for m in MASSES]  # about (0.2247, 0.3405, 0.1482, 0.2866)
RAW = [(4 * p) ** -0.4 for p in P]  # (N P)^-beta; the largest is row 3's (smallest P)
W = [x / RAW[2] for x in RAW]  # about (0.8467, 0.7170, 1, 0.7682)
HUBER = [1.475 - 0.5, 0.5 * 0.5**2, 0.5 * 0.21**2, 1.602 - 0.5]  # 0.975, 0.125, 0.02205, 1.102
MSE = [1.475**2, 0.5**2, 0.21**2, 1.602**2]


@pytest.fixture
def default() -> we.UpdateExample:
    return we.default_example()


def test_default_example_has_one_terminal_row(default: we.UpdateExample) -> None:
    assert default.rows == 4
    assert default.terminated == (False, True, False, False)


def test_targets_by_hand(default: we.UpdateExample) -> None:
    table = we.worked_update(default).table
    # Row 2 is terminal: y = r, its max Q' = 3.0 is ignored.
    assert table.loc[2, "target"] == pytest.approx(1.0)
    assert table.loc[1, "target"] == pytest.approx(1.0 + 0.99 * 2.5)
    assert table.loc[3, "target"] == pytest.approx(0.0 + 0.99 * 1.0)
    assert table.loc[4, "target"] == pytest.approx(-1.0 + 0.99 * 0.2)


def test_td_errors_and_new_priorities_by_hand(default: we.UpdateExample) -> None:
    table = we.worked_update(default).table
    np.testing.assert_allclose(table["td_error"], [1.475, 0.5, -0.21, -1.602])
    np.testing.assert_allclose(table["new_priority"], [1.485, 0.51, 0.22, 1.612])
    new_masses = [1.485**0.6, 0.51**0.6, 0.22**0.6, 1.612**0.6]
    np.testing.assert_allclose(table["new_mass"], new_masses)
    np.testing.assert_allclose(table["new_probability"], np.array(new_masses) / sum(new_masses))


def test_probabilities_weights_and_loss_by_hand(default: we.UpdateExample) -> None:
    result = we.worked_update(default)
    table = result.table
    np.testing.assert_allclose(table["probability"], P)
    np.testing.assert_allclose(table["probability"], [0.2247, 0.3405, 0.1482, 0.2866], atol=1e-4)
    np.testing.assert_allclose(table["weight"], W)
    np.testing.assert_allclose(table["weight"], [0.8467, 0.7170, 1.0, 0.7682], atol=1e-4)
    np.testing.assert_allclose(table["loss"], HUBER)
    np.testing.assert_allclose(
        table["weighted_loss"], [w * h for w, h in zip(W, HUBER, strict=True)]
    )
    assert result.loss == pytest.approx(sum(w * h for w, h in zip(W, HUBER, strict=True)) / 4)
    assert result.loss == pytest.approx(0.44596, abs=1e-5)


def test_columns_are_in_update_order(default: we.UpdateExample) -> None:
    table = we.worked_update(default).table
    assert tuple(table.columns) == we.RESULT_COLUMNS
    assert list(table.index) == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("delta", "huber", "mse"),
    [
        (0.5, 0.5 * 0.25, 0.25),  # |d| <= 1: 0.5 d^2
        (-0.21, 0.5 * 0.0441, 0.0441),
        (1.0, 0.5, 1.0),  # the two branches meet at |d| = 1
        (1.475, 1.475 - 0.5, 1.475**2),  # |d| > 1: |d| - 0.5
        (-1.602, 1.602 - 0.5, 1.602**2),
        (-3.0, 2.5, 9.0),
    ],
)
def test_huber_and_mse_by_hand(delta: float, huber: float, mse: float) -> None:
    # One terminal row with r = delta and Q = 0 gives exactly this TD error.
    example = we.UpdateExample(
        rewards=(delta,), terminated=(True,), q_values=(0.0,), next_max_q=(5.0,), priorities=(1.0,)
    )
    assert we.worked_update(example).table.loc[1, "loss"] == pytest.approx(huber)
    mse_example = dataclasses.replace(example, loss="mse")
    assert we.worked_update(mse_example).table.loc[1, "loss"] == pytest.approx(mse)


def test_mse_loss_of_default(default: we.UpdateExample) -> None:
    result = we.worked_update(dataclasses.replace(default, loss="mse"))
    np.testing.assert_allclose(result.table["loss"], MSE)
    assert result.loss == pytest.approx(sum(w * m for w, m in zip(W, MSE, strict=True)) / 4)


def test_alpha_zero_is_uniform_and_beta_one_weights_are_one(default: we.UpdateExample) -> None:
    table = we.worked_update(dataclasses.replace(default, alpha=0.0, beta=1.0)).table
    np.testing.assert_allclose(table["probability"], [0.25] * 4)
    np.testing.assert_allclose(table["weight"], [1.0] * 4)
    np.testing.assert_allclose(table["new_probability"], [0.25] * 4)


def test_beta_zero_gives_unit_weights(default: we.UpdateExample) -> None:
    table = we.worked_update(dataclasses.replace(default, beta=0.0)).table
    np.testing.assert_allclose(table["weight"], [1.0] * 4)
    np.testing.assert_allclose(table["weighted_loss"], HUBER)


def test_no_mass_left_gives_no_next_probabilities() -> None:
    """eps = 0 and delta = 0 everywhere: the new priorities are all 0, nothing can be drawn next."""
    example = we.UpdateExample(
        rewards=(1.0, 2.0),
        terminated=(True, True),
        q_values=(1.0, 2.0),
        next_max_q=(0.0, 0.0),
        priorities=(1.0, 1.0),
        eps=0.0,
    )
    result = we.worked_update(example)
    np.testing.assert_array_equal(result.table["new_priority"], [0.0, 0.0])
    assert result.table["new_probability"].isna().all()
    last = we.step_equations(example, result, 1)[-1]
    assert last.numbers.endswith(r"= \text{undefined}")


def test_gamma_zero_target_is_reward(default: we.UpdateExample) -> None:
    table = we.worked_update(dataclasses.replace(default, gamma=0.0)).table
    np.testing.assert_allclose(table["target"], default.rewards)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rewards": (1.0, math.nan, 0.0, -1.0)}, r"rewards, row 2: must be a number in"),
        ({"q_values": (1.0, 2.0, math.inf, 0.0)}, r"q_values, row 3: must be a number in"),
        ({"next_max_q": (1.0, 2.0, 3.0, "4")}, r"next_max_q, row 4: must be a number in"),
        ({"rewards": (1.0, -2e6, 0.0, 0.0)}, r"rewards, row 2: .*\[-1e\+06, 1e\+06\], got -2"),
        ({"priorities": (0.6, 0.0, 0.3, 0.9)}, r"priorities, row 2: must be > 0"),
        ({"terminated": (False, 1, False, False)}, r"terminated, row 2: must be True or False"),
        ({"rewards": (1.0, 2.0)}, r"terminated must have 2 rows like rewards, got 4"),
        ({"rewards": ()}, r"rewards must hold at least one row"),
        ({"gamma": 1.5}, r"gamma must be a number in \[0, 1\], got 1.5"),
        ({"alpha": -0.1}, r"alpha must be a number in \[0, 1\]"),
        ({"alpha": 2.0}, r"alpha must be a number in \[0, 1\]"),
        ({"beta": math.nan}, r"beta must be a number in \[0, 1\]"),
        ({"eps": -1e-3}, r"eps must be a number in \[0, 1e\+06\]"),
        ({"loss": "l1"}, r"loss must be one of \('huber', 'mse'\), got 'l1'"),
    ],
)
def test_bad_inputs_name_the_field_and_row(
    default: we.UpdateExample, change: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(default, **change)


def test_frame_round_trip(default: we.UpdateExample) -> None:
    frame = we.example_frame(default)
    assert tuple(frame.columns) == we.INPUT_COLUMNS
    parsed = we.example_from_frame(frame, gamma=0.99, alpha=0.6, beta=0.4, eps=0.01)
    assert parsed == default


def test_frame_accepts_numeric_text(default: we.UpdateExample) -> None:
    frame = we.example_frame(default).astype({"reward": object})
    frame.loc[2, "reward"] = " 2.5 "
    assert we.example_from_frame(frame).rewards[1] == 2.5


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("reward", "abc", r"row 3, reward: 'abc' is not a number"),
        ("q", None, r"row 3, q: an empty cell is not a number"),
        ("next_max_q", math.nan, r"row 3, next_max_q: an empty cell is not a number"),
        ("terminated", "maybe", r"row 3, terminated: must be ticked or not, got 'maybe'"),
    ],
)
def test_frame_bad_cells_name_row_and_column(
    default: we.UpdateExample, column: str, value: object, message: str
) -> None:
    frame = we.example_frame(default).astype({column: object})
    frame.loc[3, column] = value
    with pytest.raises(ValueError, match=message):
        we.example_from_frame(frame)


def test_frame_missing_column(default: we.UpdateExample) -> None:
    with pytest.raises(ValueError, match="lacks the column"):
        we.example_from_frame(we.example_frame(default).drop(columns="priority"))


def test_step_equations_substitute_the_row(default: we.UpdateExample) -> None:
    result = we.worked_update(default)
    steps = {s.name: s.numbers for s in we.step_equations(default, result, 2)}
    assert steps["target"] == r"y_{2} = 1 + 0.99 \times (1 - 1) \times 3 = 1"
    assert steps["TD error"] == r"\delta_{2} = 1 - 0.5 = 0.5"
    assert steps["per-sample loss"] == r"L_{2} = 0.5 \times 0.5^2 = 0.125"
    assert steps["new priority"] == r"p'_{2} = 0.5 + 0.01 = 0.51"
    row4 = {s.name: s.numbers for s in we.step_equations(default, result, 4)}
    assert row4["TD error"] == r"\delta_{4} = -0.802 - 0.8 = -1.602"
    assert row4["per-sample loss"] == r"L_{4} = 1.602 - 0.5 = 1.102"
    with pytest.raises(ValueError, match=r"row must be in \[1, 4\], got 5"):
        we.step_equations(default, result, 5)
