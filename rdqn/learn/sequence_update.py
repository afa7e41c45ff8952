"""R2D2's learner step over replayed sequences (Kapturowski et al. 2019, ICLR, section 3), for the
recurrent network (`RecurrentQNet.unroll`) and a `rdqn.replay.SequenceBatch`.

Sequence i holds l_i <= m steps t = 0 .. l_i - 1 (observations o_0 .. o_{l_i}: the last one is
its last step's next observation) and h_i, the state recorded when the actor read o_0 (R2D2's
"stored state"), or zeros (the "zero state" strategy). Its burn-in b_i is ``burn_in``, or 0 for
a sequence that begins its episode: its state is then the episode's reset state, exact, with
nothing stale to burn off (and an episode shorter than the burn-in is still learned from)::

    Q_target(., p)  the target net unrolled from h_i over o_0 .. o_{l_i}             (no gradient)
    Q(., p)         the online net unrolled from h_i: over o_0 .. o_{b_i - 1} without gradient
                    (the burn-in only produces the state at b_i), then on with gradient
    for each learning step t in T_i = [b_i, l_i):
        y_t     = r_t + gamma * (1 - terminated_t) * max_a Q_target(t + 1, a)
                  (Double: Q_target(t + 1, argmax_a Q(t + 1, a)); a truncated step bootstraps)
        delta_t = y_t - Q(t, a_t)
    loss = (1/B) sum_i w_i * (1 / |T_i|) sum_{t in T_i} L(delta_t)   (L: Huber or squared error)

(`rdqn.learn.targets.td_targets` writes y once; w_i are the sequences' IS weights, all 1 under
uniform replay or beta = 0: R2D2 uses none.) The replay then gives sequence i the priority
eta max_t |delta_t| + (1 - eta) mean_t |delta_t| over T_i (`rdqn.replay.priorities`).

A sequence shorter than m is padded on the right, which an LSTM reads only after the real steps:
the padding changes no Q-value at a real step, and no padded step has a loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import NDArray

from rdqn.learn.agent_config import AgentConfig
from rdqn.learn.errors import DivergenceError
from rdqn.learn.nets import STATE_SIZE, RecurrentQNet
from rdqn.learn.targets import discounts, td_targets
from rdqn.learn.transition_batch import as_tensor

__all__ = [
    "SequenceArrays",
    "SequenceLearnResult",
    "SequenceTD",
    "burn_ins",
    "sequence_arrays",
    "sequence_loss",
    "sequence_td",
    "sequence_update",
]


@dataclass(frozen=True)
class SequenceArrays:
    """A sequence batch as tensors on the learner's device: obs (B, m + 1, d), actions (B, m)
    int64, rewards and discounts gamma (1 - terminated) (B, m), states (B, S) or None (zeros),
    weights (B,) or None, burn-ins b_i and lengths l_i (B,) int64."""

    obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    discount: torch.Tensor
    states: torch.Tensor | None
    weights: torch.Tensor | None
    burn_in: torch.Tensor
    lengths: torch.Tensor


@dataclass(frozen=True)
class SequenceLearnResult:
    """Outcome of one update on sequences: ``td_errors`` (B, m) float64 delta_t by the
    pre-update nets, 0 off the learning steps that ``mask`` (B, m) marks; ``loss``, ``q_mean``
    (over the learning steps) and ``grad_norm`` (before clipping) as `LearnResult`."""

    td_errors: NDArray[np.float64]
    mask: NDArray[np.bool_]
    loss: float
    q_mean: float
    grad_norm: float


@dataclass(frozen=True)
class SequenceTD:
    """Per step t of each sequence (B, m): ``q_taken`` Q(t, a_t) (with gradient), ``target``
    y_t, and ``mask``, True on the learning steps T_i = [b_i, l_i)."""

    q_taken: torch.Tensor
    target: torch.Tensor
    mask: torch.Tensor

    @property
    def td_error(self) -> torch.Tensor:
        """delta_t = y_t - Q(t, a_t), 0 off the learning steps."""
        return torch.where(self.mask, self.target - self.q_taken.detach(), 0.0)


def burn_ins(
    burn_in: int, starts_episode: NDArray[np.bool_], lengths: NDArray[np.int64]
) -> NDArray[np.int64]:
    """b_i: ``burn_in``, 0 for a sequence that begins its episode; ``ValueError`` where it
    leaves a sequence no learning step (b_i >= l_i: a burn-in longer than the overlap, which
    the cut of episodes keeps every later sequence longer than)."""
    out = np.where(starts_episode, 0, burn_in).astype(np.int64)
    short = out >= lengths
    if short.any():
        k = int(np.argmax(short))
        raise ValueError(
            f"burn_in {burn_in} leaves sequence {k} of {lengths[k]} steps nothing to learn from: "
            "burn_in must be at most the sequences' overlap"
        )
    return out


def _unroll_online(online: RecurrentQNet, arrays: SequenceArrays) -> torch.Tensor:
    """Q(., p) (B, m + 1, A): the burn-in without gradient, the rest with (module docstring).
    Each row's unroll with gradient starts at its own b_i: its observations are shifted left
    by b_i (zeros after the last), then its Q-values shifted back (positions before b_i hold
    position b_i's, which no loss reads)."""
    obs, start, burn = arrays.obs, arrays.states, arrays.burn_in
    most = int(burn.max())
    if most == 0:
        return online.unroll(obs, start)[0]
    assert bool(((burn == 0) | (burn == most)).all()), "burn-ins are 0 or burn_in (`burn_ins`)"
    with torch.no_grad():
        _, burnt = online.unroll(obs[:, :most], start)
    if start is None:
        start = torch.zeros_like(burnt)
    start = torch.where((burn > 0).unsqueeze(1), burnt, start)
    positions = torch.arange(obs.shape[1], device=obs.device)
    ahead = positions + burn.unsqueeze(1)  # (B, m + 1): the position each shifted step reads
    inside = ahead < obs.shape[1]
    gathered = obs.gather(1, ahead.clamp(max=obs.shape[1] - 1).unsqueeze(2).expand_as(obs))
    shifted = torch.where(inside.unsqueeze(2), gathered, 0.0)
    q_shifted, _ = online.unroll(shifted, start)
    back = (positions - burn.unsqueeze(1)).clamp(min=0)
    return q_shifted.gather(1, back.unsqueeze(2).expand(-1, -1, q_shifted.shape[2]))


def sequence_td(
    online: RecurrentQNet,
    target: RecurrentQNet,
    arrays: SequenceArrays,
    *,
    double_dqn: bool,
) -> SequenceTD:
    """Q(t, a_t), y_t and the learning steps of every sequence (module docstring)."""
    steps = arrays.actions.shape[1]
    with torch.no_grad():
        q_target, _ = target.unroll(arrays.obs, arrays.states)
    q_online = _unroll_online(online, arrays)
    q_taken = q_online[:, :steps].gather(2, arrays.actions.unsqueeze(2)).squeeze(2)
    with torch.no_grad():
        after = q_target[:, 1:].reshape(-1, q_target.shape[2])
        picker = q_online[:, 1:].detach().reshape(-1, q_online.shape[2]) if double_dqn else None
        target_values = td_targets(
            arrays.rewards.reshape(-1), arrays.discount.reshape(-1), after, picker
        ).reshape(q_taken.shape)
    t = torch.arange(steps, device=q_taken.device)
    mask = (t >= arrays.burn_in.unsqueeze(1)) & (t < arrays.lengths.unsqueeze(1))
    return SequenceTD(q_taken=q_taken, target=target_values, mask=mask)


def sequence_loss(td: SequenceTD, weights: torch.Tensor | None, loss: str) -> torch.Tensor:
    """(1/B) sum_i w_i (1/|T_i|) sum_{t in T_i} L(delta_t) (module docstring)."""
    if loss == "huber":
        per_step = F.smooth_l1_loss(td.q_taken, td.target, reduction="none")
    else:
        per_step = F.mse_loss(td.q_taken, td.target, reduction="none")
    per_step = torch.where(td.mask, per_step, 0.0)
    per_sequence = per_step.sum(dim=1) / td.mask.sum(dim=1)
    return per_sequence.mean() if weights is None else (weights * per_sequence).mean()


def sequence_arrays(
    batch: Any,  # noqa: ANN401 (a SequenceBatch: the replay layer, which learn does not import)
    *,
    obs_dim: int,
    n_actions: int,
    gamma: float,
    burn_in: int,
    stored_state: bool,
    device: torch.device,
) -> SequenceArrays:
    """A `SequenceBatch` checked and moved to ``device``: ``ValueError`` naming the field for
    observations that are not (B, m + 1, *obs_shape) with prod(obs_shape) = ``obs_dim``, step
    arrays that are not (B, m), actions out of range, or (``stored_state``) states that are
    not (B, STATE_SIZE); b_i by `burn_ins`."""
    obs = np.asarray(batch.obs)
    if obs.ndim < 3 or int(np.prod(obs.shape[2:])) != obs_dim:
        raise ValueError(
            f"obs must have shape (B, m + 1, *obs_shape) with prod(obs_shape) == {obs_dim}, "
            f"got {obs.shape}"
        )
    size, positions = obs.shape[:2]
    shape = (size, positions - 1)
    actions = np.asarray(batch.actions)
    for name in ("actions", "rewards", "terminated"):
        if np.shape(getattr(batch, name)) != shape:
            raise ValueError(
                f"{name} must have shape {shape}, got {np.shape(getattr(batch, name))}"
            )
    if actions.size and (actions.min() < 0 or actions.max() >= n_actions):
        raise ValueError(
            f"actions must be in [0, {n_actions}), got {actions.min()}..{actions.max()}"
        )
    lengths = np.asarray(batch.lengths, dtype=np.int64)
    states = None
    if stored_state:
        states = np.asarray(batch.states)
        if states.shape != (size, STATE_SIZE):
            raise ValueError(
                f"states must have shape ({size}, {STATE_SIZE}) (the recurrent net's), got "
                f"{states.shape}"
            )
    weights = None if batch.weights is None else as_tensor(batch.weights, np.float32, device)
    return SequenceArrays(
        obs=as_tensor(obs.reshape(size, positions, obs_dim), np.float32, device),
        actions=as_tensor(actions, np.int64, device),
        rewards=as_tensor(batch.rewards, np.float32, device),
        discount=as_tensor(
            discounts(gamma, np.asarray(batch.terminated, np.float32)), np.float32, device
        ),
        states=None if states is None else as_tensor(states, np.float32, device),
        weights=weights,
        burn_in=as_tensor(
            burn_ins(burn_in, np.asarray(batch.starts_episode), lengths), np.int64, device
        ),
        lengths=as_tensor(lengths, np.int64, device),
    )


def sequence_update(
    online: RecurrentQNet,
    target: RecurrentQNet,
    optimizer: torch.optim.Optimizer,
    arrays: SequenceArrays,
    config: AgentConfig,
    update: int,
) -> SequenceLearnResult:
    """Update number ``update`` with autograd (module docstring). The optimizer steps only when
    the loss, every delta_t and the gradient norm are finite; else `DivergenceError`, the
    weights and the optimizer's state unchanged."""
    td = sequence_td(online, target, arrays, double_dqn=config.double_dqn)
    loss = sequence_loss(td, arrays.weights, config.loss)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    params = [p for p in online.parameters() if p.grad is not None]
    if config.grad_clip_norm is None:
        grad_norm = torch.nn.utils.get_total_norm([p.grad for p in params])
    else:
        grad_norm = torch.nn.utils.clip_grad_norm_(params, config.grad_clip_norm)
    q_mean = td.q_taken.detach()[td.mask].mean()
    stats = torch.stack([loss.detach(), q_mean, grad_norm.to(loss.dtype)])
    host = torch.cat([td.td_error.reshape(-1), stats]).cpu().numpy().astype(np.float64)
    mask = td.mask.cpu().numpy()
    td_errors, (loss_value, q_value, norm) = (
        host[: mask.size].reshape(mask.shape),
        host[mask.size :],
    )
    if not np.isfinite(host).all():
        optimizer.zero_grad(set_to_none=True)
        raise DivergenceError(
            f"non-finite update {update}: loss={loss_value}, grad_norm={norm}; check "
            "rewards/observations for NaN/inf or lower the learning rate. Weights were not changed."
        )
    optimizer.step()
    return SequenceLearnResult(td_errors, mask, float(loss_value), float(q_value), float(norm))
