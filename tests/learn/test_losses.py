"""The per-sample TD loss, written once: hand values, the compiled and plain calls, and torch's
losses (the autograd learner's) agree."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rdqn.learn.losses import td_loss


@pytest.mark.parametrize(
    ("x", "huber", "value", "slope"),
    [
        (0.5, True, 0.125, 0.5),  # 0.5 * 0.5^2
        (-0.5, True, 0.125, -0.5),
        (1.0, True, 0.5, 1.0),  # the two pieces meet: 0.5 * 1 = 1 - 0.5
        (2.0, True, 1.5, 1.0),  # |x| - 0.5, slope clamped
        (-3.0, True, 2.5, -1.0),
        (1.5, False, 2.25, 3.0),  # x^2, 2x
        (-0.25, False, 0.0625, -0.5),
    ],
)
def test_values_and_slopes_by_hand(x: float, huber: bool, value: float, slope: float) -> None:
    assert td_loss(x, huber) == pytest.approx((value, slope))
    assert td_loss.py_func(x, huber) == pytest.approx((value, slope))


def test_torch_s_losses_are_the_same_functions() -> None:
    x = np.random.default_rng(0).normal(scale=3.0, size=200)
    q = torch.tensor(x, requires_grad=True)
    for huber, torch_loss in ((True, F.smooth_l1_loss), (False, F.mse_loss)):
        if q.grad is not None:
            q.grad = None
        losses = torch_loss(q, torch.zeros_like(q), reduction="none")
        losses.sum().backward()
        ours = np.array([td_loss(value, huber) for value in x])
        np.testing.assert_allclose(losses.detach().numpy(), ours[:, 0], rtol=1e-12)
        np.testing.assert_allclose(q.grad.numpy(), ours[:, 1], rtol=1e-12)
