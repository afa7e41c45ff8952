"""The MLP learner's whole update as one compiled (numba) call: forward, backward, clip, Adam.

For the PER notebook's 64-64 MLP with batch 32, one autograd update runs ~230 PyTorch operators,
each costing microseconds of dispatch for a few thousand flops; the arithmetic itself is ~1 MFLOP.
This module computes exactly the update of :meth:`rdqn.learn.agent.DQNAgent.learn` for the network

    h1 = relu(x W1^T + b1),   h2 = relu(h1 W2^T + b2),   Q = h2 W3^T + b3

in one call over flat float32 buffers. With q_i = Q(s_i, a_i), targets y_i (no gradient; Double
DQN picks argmax_a Q_online(s'_i, a) and scores it with the target net: `rdqn.learn.targets`,
written out in the compiled loop and checked against it by a test) and IS weights w_i::

    loss       = (1/B) sum_i w_i L(q_i - y_i)
    dloss/dq_i = (w_i / B) L'(q_i - y_i),  L'(x) = clamp(x, -1, 1) (Huber) or 2x (squared error)
    dW3 = G^T h2,  db3 = sum_i G_i,        G = dloss/dQ (only column a_i of row i is non-zero)
    D2  = (G W3) * [h2 > 0],  dW2 = D2^T h1,  db2 = sum_i D2_i
    D1  = (D2 W2) * [h1 > 0],  dW1 = D1^T x,   db1 = sum_i D1_i

then clips the global gradient norm like ``torch.nn.utils.clip_grad_norm_`` (g <- g * min(1,
c / (||g|| + 1e-6))) and applies PyTorch's Adam (Kingma & Ba 2015, bias-corrected):
``m <- b1 m + (1-b1) g``, ``v <- b2 v + (1-b2) g^2``,
``theta <- theta - lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)``, or plain SGD.

The torch modules and the torch optimizer stay the source of truth for everything else
(checkpoints, ``nn.Module`` forward passes, the dashboard): :class:`FusedMLP` re-points their
parameters and, once an optimizer is attached, its Adam state at the flat buffers, so both views
always hold the same numbers. Training needs no torch optimizer: the agent attaches one when a
checkpoint first asks for it (building one imports ``torch._dynamo``, a second of CPU).
``tests/test_fused_mlp.py`` checks the update against autograd + ``torch.optim`` step by step.
The kernels release the GIL, so a dashboard thread keeps running while a run trains.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from rdqn.learn.losses import td_loss
from rdqn.learn.nets import MLPQNet

__all__ = ["FusedMLP", "fused_update_supported", "warm_up"]

_F32 = np.float32


def fused_update_supported(net: nn.Module, device: torch.device) -> bool:
    """True for a non-dueling two-hidden-layer :class:`MLPQNet` on the CPU."""
    if device.type != "cpu" or not isinstance(net, MLPQNet) or net.head.value is not None:
        return False
    return len([m for m in net.modules() if isinstance(m, nn.Linear)]) == 3


@numba.njit(cache=True, nogil=True)
def _layers(flat, d, h1, h2, a):  # type: ignore[no-untyped-def]
    """Views (W1, b1, W2, b2, W3, b3) into a flat vector laid out in ``parameters()`` order."""
    o1 = h1 * d
    o2 = o1 + h1
    o3 = o2 + h2 * h1
    o4 = o3 + h2
    o5 = o4 + a * h2
    return (
        flat[:o1].reshape(h1, d),
        flat[o1:o2],
        flat[o2:o3].reshape(h2, h1),
        flat[o3:o4],
        flat[o4:o5].reshape(a, h2),
        flat[o5 : o5 + a],
    )


# Matrix products as loops rather than ``@``: numba implements ``@`` with SciPy's BLAS through
# function pointers it cannot cache, so every new process would spend ~20 s recompiling. These
# loops cache, and at these sizes (at most 64 x 64) run within ~2x of BLAS.
_MATMUL_FLAGS = {"reassoc", "contract"}  # reorder sums and fuse multiply-adds; NaN/inf kept


@numba.njit(cache=True, nogil=True, fastmath=_MATMUL_FLAGS)
def _matmul(a, b):  # type: ignore[no-untyped-def]
    """a @ b, accumulated row by row so the innermost loop runs over contiguous memory."""
    out = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    for i in range(a.shape[0]):
        for k in range(a.shape[1]):
            scale = a[i, k]
            for j in range(b.shape[1]):
                out[i, j] += scale * b[k, j]
    return out


@numba.njit(cache=True, nogil=True)
def _matmul_tn(a, b):  # type: ignore[no-untyped-def]
    """a.T @ b (sums over the batch rows of a and b)."""
    return _matmul(np.ascontiguousarray(a.T), b)


@numba.njit(cache=True, nogil=True)
def _affine(x, w, b, relu):  # type: ignore[no-untyped-def]
    """x W^T + b, optionally followed by ReLU."""
    z = _matmul(x, np.ascontiguousarray(w.T))
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            v = z[i, j] + b[j]
            z[i, j] = v if (v > 0.0 or not relu) else 0.0
    return z


@numba.njit(cache=True, nogil=True)
def _forward(x, flat, dims):  # type: ignore[no-untyped-def]
    w1, b1, w2, b2, w3, b3 = _layers(flat, dims[0], dims[1], dims[2], dims[3])
    hidden1 = _affine(x, w1, b1, True)
    hidden2 = _affine(hidden1, w2, b2, True)
    return hidden1, hidden2, _affine(hidden2, w3, b3, False)


@numba.njit(cache=True, nogil=True)
def mlp_q_values(x, flat, dims):  # type: ignore[no-untyped-def]
    """Q-values (B, A) for observations x (B, d), float32."""
    return _forward(x, flat, dims)[2]


@numba.njit(cache=True, nogil=True)
def _backward_into(grad, x, hidden1, hidden2, dq, flat, dims):  # type: ignore[no-untyped-def]
    """Write dloss/dtheta into ``grad`` given dloss/dQ = ``dq`` (B, A); see the module docstring."""
    _, _, w2, _, w3, _ = _layers(flat, dims[0], dims[1], dims[2], dims[3])
    gw1, gb1, gw2, gb2, gw3, gb3 = _layers(grad, dims[0], dims[1], dims[2], dims[3])
    gw3[:, :] = _matmul_tn(dq, hidden2)
    gb3[:] = dq.sum(axis=0)
    d2 = _matmul(dq, w3)
    for i in range(d2.shape[0]):
        for j in range(d2.shape[1]):
            if hidden2[i, j] <= 0.0:
                d2[i, j] = 0.0
    gw2[:, :] = _matmul_tn(d2, hidden1)
    gb2[:] = d2.sum(axis=0)
    d1 = _matmul(d2, w2)
    for i in range(d1.shape[0]):
        for j in range(d1.shape[1]):
            if hidden1[i, j] <= 0.0:
                d1[i, j] = 0.0
    gw1[:, :] = _matmul_tn(d1, x)
    gb1[:] = d1.sum(axis=0)


@numba.njit(cache=True, nogil=True)
def _dqn_update(  # type: ignore[no-untyped-def]
    obs, actions, rewards, discount, weights, next_obs,
    online, target, grad, exp_avg, exp_avg_sq, step, dims,
    huber, double_dqn, clip_norm, adam, lr, beta1, beta2, adam_eps,
):  # fmt: skip
    """One TD update in place; returns (td float32 (B,), [loss, q_mean, grad_norm]).

    Nothing is written when the result is non-finite (the caller raises).
    """
    batch = obs.shape[0]
    hidden1, hidden2, q = _forward(obs, online, dims)
    next_q = _forward(next_obs, target, dims)[2]
    if double_dqn:
        next_online = _forward(next_obs, online, dims)[2]
    td = np.empty(batch, dtype=np.float32)
    dq = np.zeros_like(q)
    loss = 0.0
    q_sum = 0.0
    for i in range(batch):
        # y_i as `rdqn.learn.targets.td_targets` computes it (tests/learn/test_targets.py).
        next_value = next_q[i, np.argmax(next_online[i])] if double_dqn else next_q[i].max()
        y = np.float32(rewards[i] + discount[i] * next_value)
        q_taken = q[i, actions[i]]
        diff = q_taken - y
        td[i] = -diff
        q_sum += q_taken
        per_sample, slope = td_loss(diff, huber)
        loss += weights[i] * per_sample
        dq[i, actions[i]] = weights[i] * slope / batch
    _backward_into(grad, obs, hidden1, hidden2, dq, online, dims)
    norm = np.sqrt(np.sum(grad.astype(np.float64) ** 2))
    stats = np.array([loss / batch, q_sum / batch, norm])
    if not (np.isfinite(stats).all() and np.isfinite(td).all()):
        return td, stats
    if clip_norm > 0.0:
        grad *= np.float32(min(clip_norm / (norm + 1e-6), 1.0))
    if adam:
        step += 1.0
        t = step[0]
        step_size = lr / (1.0 - beta1**t)
        root_correction = np.sqrt(1.0 - beta2**t)
        for k in range(online.shape[0]):
            g = grad[k]
            exp_avg[k] = beta1 * exp_avg[k] + (1.0 - beta1) * g
            exp_avg_sq[k] = beta2 * exp_avg_sq[k] + (1.0 - beta2) * g * g
            denom = np.sqrt(exp_avg_sq[k]) / root_correction + adam_eps
            online[k] -= np.float32(step_size * exp_avg[k] / denom)
    else:
        for k in range(online.shape[0]):
            online[k] -= np.float32(lr * grad[k])
    return td, stats


def warm_up() -> None:
    """Compile the kernels for the argument types training uses, or load them from numba's cache.

    A first compile takes ~20 s (later processes load the cached machine code in well under a
    second). The dashboard calls this in a background thread at start-up, so a first run does
    not stall at its first action or first update.
    """
    d = h1 = h2 = a = 1
    size = h1 * d + h1 + h2 * h1 + h2 + a * h2 + a
    dims = np.array([d, h1, h2, a], dtype=np.int64)
    obs = np.zeros((1, d), dtype=_F32)
    rows = np.zeros(1, dtype=_F32)
    mlp_q_values(obs, np.zeros(size, dtype=_F32), dims)
    _dqn_update(
        obs, np.zeros(1, dtype=np.int64), rows, rows, rows, obs,
        *(np.zeros(size, dtype=_F32) for _ in range(5)), np.zeros(3, dtype=_F32), dims,
        True, False, 1.0, True, 1e-3, 0.9, 0.999, 1e-8,
    )  # fmt: skip


@dataclass(frozen=True)
class FusedResult:
    """Raw kernel output: TD errors (B,) float32 and ``[loss, q_mean, grad_norm]`` float64."""

    td_errors: NDArray[np.float32]
    stats: NDArray[np.float64]


class FusedMLP:
    """Flat float32 buffers behind an online/target :class:`MLPQNet` pair and its optimizer.

    After construction the modules' parameters are views of these buffers, and so are Adam's
    ``exp_avg``/``exp_avg_sq``/``step`` in a torch optimizer once :meth:`attach` shared them:
    updating one updates the other. Call :meth:`rebind` after ``load_state_dict`` replaced the
    attached optimizer's state tensors (and perhaps its hyperparameters).
    """

    def __init__(
        self,
        online: MLPQNet,
        target: MLPQNet,
        *,
        optimizer: str,
        lr: float,
        loss: str,
        double_dqn: bool,
        grad_clip_norm: float | None,
    ) -> None:
        linears = [m for m in online.modules() if isinstance(m, nn.Linear)]
        self.dims = np.array(
            [linears[0].in_features, linears[0].out_features, linears[1].out_features,
             linears[2].out_features],
            dtype=np.int64,
        )  # fmt: skip
        self._params = list(online.parameters())
        self.online = _adopt(self._params)
        self.target = _adopt(list(target.parameters()))
        self.grad = np.zeros_like(self.online)
        for param, view in zip(self._params, _views(self.grad, self._params), strict=True):
            param.grad = view
        self.exp_avg = np.zeros_like(self.online)
        self.exp_avg_sq = np.zeros_like(self.online)
        # One step counter per parameter, as torch.optim keeps them; one tensor shared by all
        # would be incremented once per parameter by torch.optim after a checkpoint round trip.
        self.step = np.zeros(len(self._params), dtype=_F32)
        self.optimizer: torch.optim.Optimizer | None = None
        self.adam = optimizer == "adam"
        self.lr = float(lr)
        self.betas = (0.9, 0.999)  # torch.optim.Adam's defaults, as the agent builds it
        self.adam_eps = 1e-8
        self.huber = loss == "huber"
        self.double_dqn = double_dqn
        self.clip_norm = -1.0 if grad_clip_norm is None else float(grad_clip_norm)

    def attach(self, optimizer: torch.optim.Optimizer) -> None:
        """Make ``optimizer`` (fresh, over the online parameters) hold this update's Adam state
        as views of the flat buffers."""
        self.optimizer = optimizer
        self._share_state(copy_in=False)

    def rebind(self) -> None:
        """Copy the attached optimizer's state and hyperparameters (after its
        ``load_state_dict``) into the flat buffers and share them back."""
        assert self.optimizer is not None, "attach an optimizer first"
        group = self.optimizer.param_groups[0]
        self.lr = float(group["lr"])
        self.betas = tuple(map(float, group.get("betas", self.betas)))  # type: ignore[assignment]
        self.adam_eps = float(group.get("eps", self.adam_eps))
        self._share_state(copy_in=True)

    def _share_state(self, *, copy_in: bool) -> None:
        """Point the optimizer's Adam state at the flat buffers; ``copy_in`` first copies the
        optimizer's own state (zeros where it has none) into them."""
        if not self.adam:
            return
        assert self.optimizer is not None
        state = self.optimizer.state
        if copy_in:
            first = state.get(self._params[0], {})
            self.step[:] = float(first["step"]) if "step" in first else 0.0
        views = {
            "exp_avg": _views(self.exp_avg, self._params),
            "exp_avg_sq": _views(self.exp_avg_sq, self._params),
        }
        for index, param in enumerate(self._params):
            entry = state.get(param, {})
            for key, key_views in views.items():
                view = key_views[index]
                if copy_in:
                    if key in entry:
                        view.copy_(entry[key])
                    else:
                        view.zero_()
                entry[key] = view
            entry["step"] = torch.from_numpy(self.step[index : index + 1]).view(())
            state[param] = entry

    def q_values(self, obs: NDArray[np.float32]) -> NDArray[np.float32]:
        """Online Q-values (B, A) for observations (B, d)."""
        return mlp_q_values(obs, self.online, self.dims)

    def update(
        self,
        obs: NDArray[np.float32],
        actions: NDArray[np.int64],
        rewards: NDArray[np.float32],
        discount: NDArray[np.float32],
        weights: NDArray[np.float32],
        next_obs: NDArray[np.float32],
    ) -> FusedResult:
        """One update in place (see the module docstring); a non-finite result changes nothing."""
        beta1, beta2 = self.betas
        td, stats = _dqn_update(
            obs, actions, rewards, discount, weights, next_obs,
            self.online, self.target, self.grad, self.exp_avg, self.exp_avg_sq, self.step,
            self.dims, self.huber, self.double_dqn, self.clip_norm, self.adam,
            self.lr, beta1, beta2, self.adam_eps,
        )  # fmt: skip
        return FusedResult(td_errors=td, stats=stats)


def _views(flat: NDArray[np.float32], params: list[nn.Parameter]) -> list[torch.Tensor]:
    """Tensors shaped like ``params`` that share consecutive slices of ``flat``."""
    offsets = np.cumsum([0] + [p.numel() for p in params])
    return [
        torch.from_numpy(flat[start:stop]).view_as(param)
        for param, start, stop in zip(params, offsets[:-1], offsets[1:], strict=True)
    ]


def _adopt(params: list[nn.Parameter]) -> NDArray[np.float32]:
    """Concatenate ``params`` into one float32 vector and make each parameter a view of it."""
    flat = np.concatenate([p.detach().reshape(-1).numpy() for p in params]).astype(_F32)
    for param, view in zip(params, _views(flat, params), strict=True):
        param.data = view
    return flat
