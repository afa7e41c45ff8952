"""rdqn.worked_example: the update by hand checked against arithmetic written out here, and the
sum-tree demo helpers against `rdqn.replay.SumTree`.

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

from rdqn import worked_example as we
from rdqn.replay import SumTree

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


# --------------------------------------------------------------------------- the sum tree demo


def test_leaf_table_by_hand() -> None:
    """Priorities (4, 1, 0, 1), alpha 0.5: masses (2, 1, 0, 1), total 4, P = (.5, .25, 0, .25);
    beta 1: (N P)^-1 = (0.5, 1, -, 1), normalised by 1; leaf 2 is never sampled (NaN weight)."""
    table = we.leaf_table([4.0, 1.0, 0.0, 1.0], alpha=0.5, beta=1.0)
    np.testing.assert_allclose(table["mass"], [2.0, 1.0, 0.0, 1.0])
    np.testing.assert_allclose(table["probability"], [0.5, 0.25, 0.0, 0.25])
    np.testing.assert_allclose(table["weight"], [0.5, 1.0, np.nan, 1.0])


def test_leaf_table_alpha_zero_is_uniform_even_for_zero_priority() -> None:
    table = we.leaf_table([4.0, 1.0, 0.0, 1.0], alpha=0.0, beta=0.4)
    np.testing.assert_allclose(table["probability"], [0.25] * 4)
    np.testing.assert_allclose(table["weight"], [1.0] * 4)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([1.0, -1.0, 2.0], r"bad cell: leaf 1 \(-1.0\)"),
        ([1.0, None, "x"], r"bad cells: leaf 1 \(an empty cell\), leaf 2 \('x'\)"),
        ([math.inf, 1.0], r"leaf 0 \(inf\)"),
        ([2e6, 1.0], r"numbers in \[0, 1e\+06\]; bad cell: leaf 0 \(2000000.0\)"),
        ([0.0, 0.0], r"at least one priority must be > 0"),
        ([], r"must not be empty"),
    ],
)
def test_check_priorities_names_bad_leaves(values: list[object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        we.check_priorities(values)


def test_check_priorities_accepts_numbers_and_numeric_text() -> None:
    np.testing.assert_array_equal(we.check_priorities([1, "2.5", 0.0]), [1.0, 2.5, 0.0])


def test_default_and_random_priorities() -> None:
    assert we.default_priorities(8).tolist() == [3.0, 0.5, 1.0, 0.2, 2.0, 0.8, 0.1, 1.5]
    assert we.default_priorities(12).size == 12
    a = we.random_priorities(64, np.random.default_rng(1))
    b = we.random_priorities(64, np.random.default_rng(1))
    np.testing.assert_array_equal(a, b)
    assert (a >= 0.01).all()
    we.check_priorities(a)


def test_descent_path_heap_layout() -> None:
    """Offset 8: leaf 5 is node 13; 13 >> 1 = 6, >> 2 = 3, >> 3 = 1."""
    assert we.descent_path(5, 8) == [1, 3, 6, 13]
    assert we.descent_path(0, 8) == [1, 2, 4, 8]
    assert we.descent_path(63, 64)[-1] == 127
    with pytest.raises(ValueError, match=r"leaf must be in \[0, 8\)"):
        we.descent_path(8, 8)


def test_draw_batch_uses_the_sum_tree() -> None:
    """Masses (1, 2, 3, 4), total 10, B = 2: segments [0, 5) and [5, 10).
    u = (0.5, 0.5) -> queries 2.5 (leaf 1 owns [1, 3)) and 7.5 (leaf 3 owns [6, 10))."""
    tree = we.build_tree([1.0, 2.0, 3.0, 4.0])
    assert isinstance(tree, SumTree)
    draw = we.draw_batch(tree, [0.5, 0.5])
    np.testing.assert_allclose(draw.queries, [2.5, 7.5])
    np.testing.assert_array_equal(draw.leaves, [1, 3])
    assert draw.paths == [[1, 2, 5], [1, 3, 7]]
    frame = draw.frame()
    assert frame["path"].tolist() == ["1 → 2 → 5", "1 → 3 → 7"]
    np.testing.assert_allclose(frame["segment from"], [0.0, 5.0])


def test_stratified_queries_one_per_segment_for_many_batches() -> None:
    """Total 10, B = 2 (last axis): segments [0, 5) and [5, 10); m_k = (k + u_k) * 5."""
    queries = we.stratified_queries(10.0, [[0.0, 0.5], [0.5, 0.0]])
    np.testing.assert_allclose(queries, [[0.0, 7.5], [2.5, 5.0]])


def test_stratified_queries_rejects_bad_uniforms() -> None:
    with pytest.raises(ValueError, match=r"uniforms must lie in \[0, 1\)"):
        we.stratified_queries(10.0, [0.5, 1.0])


def test_draw_counts_converge_to_p() -> None:
    """40,000 draws from P = (0.1, 0.2, 0.3, 0.4): every frequency within 0.01 (about 4 sigma)."""
    tree = we.build_tree([1.0, 2.0, 3.0, 4.0])
    counts = we.draw_counts(tree, 4, 10_000, np.random.default_rng(0))
    assert counts.sum() == 40_000
    np.testing.assert_allclose(counts / 40_000, [0.1, 0.2, 0.3, 0.4], atol=0.01)


def test_draw_counts_never_hit_zero_mass_leaves() -> None:
    tree = we.build_tree([1.0, 0.0, 3.0, 0.0, 5.0])
    counts = we.draw_counts(tree, 16, 200, np.random.default_rng(3))
    assert counts[1] == 0 and counts[3] == 0 and counts.sum() == 3200


def test_tally_accumulates_for_its_masses() -> None:
    tally = we.Tally.empty([1.0, 2.0])
    assert tally.total == 0 and tally.matches([1.0, 2.0]) and not tally.matches([1.0, 3.0])
    tally = tally.add([3, 1]).add(np.array([0, 4]))
    assert tally.counts == (3, 5) and tally.total == 8
    with pytest.raises(ValueError, match="counts must have 2 entries"):
        tally.add([1, 2, 3])
