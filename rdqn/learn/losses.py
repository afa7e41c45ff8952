"""The per-sample loss of a TD error, written once (Huber by default, or the squared error).

With x = Q(s, a) - y, the prediction's error (delta = -x):

    Huber (threshold 1)   L(x) = 0.5 x^2 if |x| < 1 else |x| - 0.5     L'(x) = clamp(x, -1, 1)
    squared error         L(x) = x^2                                    L'(x) = 2 x

`td_loss` is compiled for the fused MLP update (`rdqn.learn.fused_mlp`, which inlines it) and
called plain by the classroom's worked example and the tabular learner (`td_loss.py_func`,
`rdqn.experiments.tabular`); the autograd learner uses torch's ``smooth_l1_loss`` and
``mse_loss``, the same functions (a test checks that they agree).
"""

from __future__ import annotations

import numba

__all__ = ["td_loss"]


@numba.njit(cache=True, nogil=True, inline="always")
def td_loss(x: float, huber: bool) -> tuple[float, float]:
    """(L(x), L'(x)) for the error x = Q(s, a) - y; see the module docstring."""
    if huber:
        magnitude = abs(x)
        value = 0.5 * x * x if magnitude < 1.0 else magnitude - 0.5
        return value, min(max(x, -1.0), 1.0)
    return x * x, 2.0 * x
