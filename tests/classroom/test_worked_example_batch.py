"""The by-hand update averages the loss over the batch (B rows), while N, the buffer size, stays
in P(i) and the IS weights; here the batch is the whole buffer, so B = N = 4."""

from __future__ import annotations

import pytest

from rdqn.classroom import worked_example as we


def steps(row: int = 2) -> dict[str, we.Step]:
    example = we.default_example()
    return {s.name: s for s in we.step_equations(example, we.worked_update(example), row)}


def test_the_batch_loss_is_a_mean_over_b() -> None:
    batch_loss = steps()["batch loss"]
    assert batch_loss.formula == r"\mathcal{L} = \frac{1}{B} \sum_{i=1}^{B} w_i L_i"
    result = we.worked_update(we.default_example())
    total = float(result.table["weighted_loss"].sum())
    assert result.loss == pytest.approx(total / 4)
    assert batch_loss.numbers.startswith(r"\mathcal{L} = \frac{1}{4} \times ")
    assert batch_loss.numbers.endswith("= 0.446")


def test_n_stays_in_the_weights_and_nowhere_averages() -> None:
    every = steps()
    assert r"(N\,P(i))^{-\beta}" in every["IS weight"].formula
    assert r"w_{2} = \frac{(4 \times" in every["IS weight"].numbers
    assert not any(r"\frac{1}{N}" in s.formula for s in every.values())


def test_the_weighted_loss_step_is_the_row_s_product() -> None:
    assert steps()["weighted loss"].numbers == r"w_{2} L_{2} = 0.717 \times 0.125 = 0.0896"


def test_the_target_uses_d_for_terminated() -> None:
    assert r"(1 - d_i)" in steps()["target"].formula
