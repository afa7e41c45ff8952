"""DQN agent: epsilon-greedy acting and one importance-weighted TD update per replay batch.

For a batch of transitions (W_i, a_i, r_i, W'_i, terminated_i) with IS weights w_i (Schaul et al.
2015, arXiv:1511.05952, Algorithm 1; docs/design.md, "Semantics")::

    y_i     = r_i + gamma * (1 - terminated_i) * max_a' Q_target(W'_i, a')        (no gradient)
    y_i     = r_i + gamma * (1 - terminated_i) * Q_target(W'_i, argmax_a' Q(W'_i, a'))  (Double)
              (`rdqn.learn.targets.td_targets`)
    delta_i = y_i - Q(W_i, a_i)                (only the taken action, via ``gather``)
    loss    = (1/B) * sum_i w_i * L(delta_i)   (L = Huber or squared error; w_i before the mean)

A *truncated* step (time limit) still bootstraps; only termination removes the next-state term. The
signed ``delta_i`` are returned so the replay sampler can set priorities ``(|delta_i| + eps)^alpha``
for exactly the sampled indices. After the optimizer step the target network moves either softly,
``theta' <- tau * theta + (1 - tau) * theta'`` after every update (E14, tau = .005), or by a hard
copy every K updates (E15, PER notebook). The two are different protocols, chosen per preset.

Seeding: one ``seed`` feeds a ``np.random.SeedSequence`` whose two children drive (1) a CPU
``torch.Generator`` used only for weight initialisation and (2) a ``np.random.Generator`` used only
for epsilon-greedy. No global RNG is read or advanced, so concurrent runs stay reproducible.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import NDArray
from torch import nn

from rdqn.learn.agent_config import AgentConfig, resolve_device
from rdqn.learn.agent_state import check_agent_state, explore_rng_state
from rdqn.learn.errors import DivergenceError
from rdqn.learn.fused_mlp import FusedMLP, fused_update_supported
from rdqn.learn.nets import STATE_SIZE, RecurrentQNet, build_q_network
from rdqn.learn.sequence_update import SequenceLearnResult, sequence_arrays, sequence_update
from rdqn.learn.targets import next_values, td_targets
from rdqn.learn.transition_batch import BatchArrays, BatchLike, as_tensor, batch_arrays
from rdqn.validation import check_integer

__all__ = [
    "BatchLike",
    "DQNAgent",
    "DivergenceError",
    "LearnResult",
    "SequenceLearnResult",
    "TDTerms",
]


@dataclass(frozen=True)
class LearnResult:
    """Outcome of one update.

    ``td_errors``: signed delta_i = y_i - Q(W_i, a_i), float64 shape (B,), from the pre-update net.
    ``loss``: the IS-weighted mean loss that was minimised. ``q_mean``: mean of Q(W_i, a_i) over the
    batch. ``grad_norm``: global L2 norm of the gradient *before* clipping.
    """

    td_errors: NDArray[np.float64]
    loss: float
    q_mean: float
    grad_norm: float


@dataclass(frozen=True)
class TDTerms:
    """The terms of each transition's TD error by the current networks, float64 (B,) each:
    ``q_taken`` Q(W_i, a_i), ``next_value`` Q_target(W'_i, a*_i) (the next window's value, which
    termination multiplies by 0), ``target`` y_i and ``td_error`` delta_i = y_i - Q(W_i, a_i)."""

    q_taken: NDArray[np.float64]
    next_value: NDArray[np.float64]
    target: NDArray[np.float64]
    td_error: NDArray[np.float64]


class DQNAgent:
    """Online and target Q-networks, Adam, epsilon-greedy acting and the module docstring's update.

    ``obs_dim`` is the flattened observation size d; windows may carry any ``obs_shape`` with
    ``prod(obs_shape) == d``. The target network starts as an exact copy of the online network and
    never requires gradients.
    """

    def __init__(self, obs_dim: int, n_actions: int, config: AgentConfig, *, seed: int) -> None:
        check_integer("seed", seed, minimum=0)
        self.config = config
        self.obs_dim = obs_dim
        self.n_actions = n_actions
        self.device = resolve_device(config.device)
        init_seq, explore_seq = np.random.SeedSequence(int(seed)).spawn(2)
        init_generator = torch.Generator(device="cpu")
        init_generator.manual_seed(int(init_seq.generate_state(1, dtype=np.uint64)[0]))
        self._rng = np.random.default_rng(explore_seq)

        online = build_q_network(
            config.network, obs_dim, n_actions, dueling=config.dueling, generator=init_generator
        )
        target = copy.deepcopy(online).requires_grad_(False)
        self.online: nn.Module = online.to(self.device)
        self.target: nn.Module = target.to(self.device)
        self._recurrent = isinstance(online, RecurrentQNet)  # the one network that reads masks
        self._online_params = list(self.online.parameters())
        self._target_params = list(self.target.parameters())
        self._fused: FusedMLP | None = None
        self._optimizer: torch.optim.Optimizer | None = None
        if config.fused_mlp and fused_update_supported(self.online, self.device):
            self._fused = FusedMLP(
                self.online,
                self.target,
                optimizer=config.optimizer,
                lr=config.lr,
                loss=config.loss,
                double_dqn=config.double_dqn,
                grad_clip_norm=config.grad_clip_norm,
            )
        else:
            self._optimizer = self._new_optimizer()
        self.updates = 0

    def _new_optimizer(self) -> torch.optim.Optimizer:
        if self.config.optimizer == "adam":
            return torch.optim.Adam(self.online.parameters(), lr=self.config.lr, fused=True)
        return torch.optim.SGD(self.online.parameters(), lr=self.config.lr)

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The torch optimizer over the online network (its state is the checkpoints' format).

        The fused update keeps Adam's state in its own flat buffers and needs none to train, so
        it is built on first use (a checkpoint) and then shares those buffers: building one
        imports ``torch._dynamo``, a second of CPU that a first run on a fresh server would
        otherwise wait for before its first step.
        """
        if self._optimizer is None:
            assert self._fused is not None
            self._optimizer = self._new_optimizer()
            self._fused.attach(self._optimizer)
        return self._optimizer

    @property
    def learner(self) -> str:
        """``"fused-mlp"`` (one compiled call, :mod:`rdqn.learn.fused_mlp`) or ``"autograd"``."""
        return "autograd" if self._fused is None else "fused-mlp"

    # ---------------------------------------------------------------- acting
    def _window_array(self, window: NDArray[np.floating]) -> NDArray[np.float32]:
        """One window ``(T, *obs_shape)`` as a float32 array ``(T, d)``."""
        window = np.asarray(window, dtype=np.float32)
        if window.ndim < 2 or math.prod(window.shape[1:]) != self.obs_dim:
            raise ValueError(
                f"window must have shape (T, *obs_shape) with prod(obs_shape) == {self.obs_dim}, "
                f"got {window.shape}"
            )
        return window.reshape(window.shape[0], self.obs_dim)

    def q_values(
        self, window: NDArray[np.floating], mask: NDArray[np.bool_] | None = None
    ) -> NDArray[np.float32]:
        """Online Q-values ``(A,)`` for one window ``(T, *obs_shape)`` whose real frames
        ``mask`` ``(T,)`` marks (a recurrent network reads only those)."""
        window = self._window_array(window)
        if self._fused is not None:
            return self._fused.q_values(np.ascontiguousarray(window[-1:]))[0]
        masks = None if mask is None or not self._recurrent else np.asarray(mask, np.bool_)[None]
        with torch.no_grad():
            q = self._q(self.online, as_tensor(window[None], np.float32, self.device), masks)
            return q[0].cpu().numpy()

    def _q(self, net: nn.Module, obs: torch.Tensor, mask: NDArray[np.bool_] | None) -> torch.Tensor:
        """``net``'s Q-values for ``obs``, over the real frames ``mask`` marks when given."""
        if mask is None:
            return net(obs)
        return net(obs, torch.from_numpy(mask).to(obs.device))

    def act(
        self, window: NDArray[np.floating], epsilon: float, mask: NDArray[np.bool_] | None = None
    ) -> int:
        """Epsilon-greedy action for one window ``(T, *obs_shape)`` (real frames: ``mask``).

        With probability ``epsilon`` a uniform random action, otherwise argmax_a Q(W, a) (first
        maximum on ties). One uniform draw is consumed per call whatever ``epsilon`` is, so the
        exploration stream does not depend on the epsilon schedule.
        """
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
        if self._rng.random() < epsilon:
            return int(self._rng.integers(self.n_actions))
        return int(np.argmax(self.q_values(window, mask)))

    def act_carrying(
        self, obs: NDArray[np.floating], state: NDArray[np.float32], epsilon: float
    ) -> tuple[int, NDArray[np.float32]]:
        """Epsilon-greedy action for observation o_t read by the recurrent net from ``state``
        (its state before o_t, `STATE_SIZE` values), and its state after o_t: acting for
        sequence replay, which carries the state through an episode from zeros at its start.
        One uniform draw per call, as `act`; the net runs even when it explores, since the
        state goes on."""
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
        explore = self._rng.random() < epsilon
        q, after = self.q_values_carrying(obs, state)
        action = int(self._rng.integers(self.n_actions)) if explore else int(np.argmax(q))
        return action, after

    def q_values_carrying(
        self, obs: NDArray[np.floating], state: NDArray[np.float32]
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """Online Q-values ``(A,)`` of observation o_t read from ``state``, and the state
        after it (`RecurrentQNet.unroll` over one step)."""
        if not self._recurrent:
            raise ValueError(
                f"only the recurrent network carries a state, not {self.config.network}"
            )
        steps = np.asarray(obs, dtype=np.float32).reshape(1, 1, self.obs_dim)
        before = np.asarray(state, dtype=np.float32).reshape(1, STATE_SIZE)
        with torch.no_grad():
            q, after = self.online.unroll(
                as_tensor(steps, np.float32, self.device),
                as_tensor(before, np.float32, self.device),
            )
        return q[0, 0].cpu().numpy(), after[0].cpu().numpy()

    def td_terms(self, batch: BatchLike) -> TDTerms:
        """Q(W_i, a_i), Q_target(W'_i, a*_i), the target y_i and the TD error delta_i = y_i -
        Q(W_i, a_i) of each transition of ``batch`` by the current networks, with no update (the
        numbers "One update by hand" shows for a stored memory)."""
        arrays = self._arrays(batch)
        dev = self.device
        with torch.no_grad():
            obs = as_tensor(arrays.obs, np.float32, dev)
            next_obs = as_tensor(arrays.next_obs, np.float32, dev)
            actions = as_tensor(arrays.actions, np.int64, dev).unsqueeze(1)
            q_taken = self._q(self.online, obs, arrays.obs_mask).gather(1, actions)
            q_taken = q_taken.squeeze(1).double()
            next_q = self._q(self.target, next_obs, arrays.next_obs_mask).double()
            next_online = (
                self._q(self.online, next_obs, arrays.next_obs_mask).double()
                if self.config.double_dqn
                else None
            )
            rewards = as_tensor(arrays.rewards, np.float32, dev).double()
            discount = as_tensor(arrays.discount, np.float32, dev).double()
            target = td_targets(rewards, discount, next_q, next_online)
        return TDTerms(
            q_taken=q_taken.cpu().numpy(),
            next_value=next_values(next_q, next_online).cpu().numpy(),
            target=target.cpu().numpy(),
            td_error=(target - q_taken).cpu().numpy(),
        )

    # -------------------------------------------------------------- learning
    def learn(self, batch: BatchLike) -> LearnResult:
        """One IS-weighted TD update on ``batch``; see the module docstring for the math.

        Raises :class:`DivergenceError` (weights, optimizer state and ``updates`` untouched) when
        the loss, any TD error or the gradient norm is non-finite.
        """
        arrays = self._arrays(batch)
        if self._fused is not None:
            host = self._fused_update(self._fused, arrays)
        else:
            host = self._autograd_update(arrays)
        batch_size = arrays.actions.shape[0]
        td_errors, (loss_value, q_mean, norm_value) = host[:batch_size], host[batch_size:]
        if not np.isfinite(host).all():
            bad = int(np.count_nonzero(~np.isfinite(td_errors)))
            raise DivergenceError(
                f"non-finite update {self.updates + 1}: loss={loss_value}, grad_norm={norm_value}, "
                f"{bad} of {batch_size} TD errors non-finite; check rewards/observations for "
                "NaN/inf or lower the learning rate. Weights were not changed."
            )
        self.updates += 1
        self._update_target()
        return LearnResult(
            td_errors=td_errors,
            loss=float(loss_value),
            q_mean=float(q_mean),
            grad_norm=float(norm_value),
        )

    def learn_sequences(
        self,
        batch: Any,
        *,
        burn_in: int,
        stored_state: bool,  # noqa: ANN401 (SequenceBatch)
    ) -> SequenceLearnResult:
        """One IS-weighted update on replayed sequences (`rdqn.learn.sequence_update`: unrolls
        from the stored state, or zeros without ``stored_state``, after a burn-in of
        ``burn_in`` steps); the recurrent network only. :class:`DivergenceError`, nothing
        changed, as for `learn`."""
        if not self._recurrent:
            raise ValueError(
                f"only the recurrent network learns from sequences, not the {self.config.network}"
            )
        arrays = sequence_arrays(
            batch,
            obs_dim=self.obs_dim,
            n_actions=self.n_actions,
            gamma=self.config.gamma,
            burn_in=burn_in,
            stored_state=stored_state,
            device=self.device,
        )
        result = sequence_update(
            self.online, self.target, self.optimizer, arrays, self.config, self.updates + 1
        )
        self.updates += 1
        self._update_target()
        return result

    def _arrays(self, batch: BatchLike) -> BatchArrays:
        return batch_arrays(
            batch,
            obs_dim=self.obs_dim,
            n_actions=self.n_actions,
            gamma=self.config.gamma,
            recurrent=self._recurrent,
        )

    @staticmethod
    def _fused_update(fused: FusedMLP, arrays: BatchArrays) -> NDArray[np.float64]:
        """The update as one compiled call (:mod:`rdqn.learn.fused_mlp`; the MLP reads the last
        step).

        Returns ``[td..., loss, q_mean, norm]``; nothing changes unless all are finite.
        """
        weights = np.ones_like(arrays.rewards) if arrays.weights is None else arrays.weights
        result = fused.update(
            np.ascontiguousarray(arrays.obs[:, -1, :]),
            arrays.actions,
            arrays.rewards,
            arrays.discount,
            weights,
            np.ascontiguousarray(arrays.next_obs[:, -1, :]),
        )
        return np.concatenate([result.td_errors, result.stats])

    def _autograd_update(self, arrays: BatchArrays) -> NDArray[np.float64]:
        """The update with autograd and ``torch.optim``; returns ``[td..., loss, q_mean, norm]``.

        The optimizer steps only when every returned number is finite.
        """
        cfg = self.config
        dev = self.device
        obs = as_tensor(arrays.obs, np.float32, dev)
        next_obs = as_tensor(arrays.next_obs, np.float32, dev)
        actions = as_tensor(arrays.actions, np.int64, dev).unsqueeze(1)
        rewards = as_tensor(arrays.rewards, np.float32, dev)
        discount = as_tensor(arrays.discount, np.float32, dev)
        weights = None if arrays.weights is None else as_tensor(arrays.weights, np.float32, dev)

        q_taken = self._q(self.online, obs, arrays.obs_mask).gather(1, actions).squeeze(1)
        with torch.no_grad():
            next_q = self._q(self.target, next_obs, arrays.next_obs_mask)
            next_online = (
                self._q(self.online, next_obs, arrays.next_obs_mask) if cfg.double_dqn else None
            )
            td_target = td_targets(rewards, discount, next_q, next_online)
        if cfg.loss == "huber":
            per_sample = F.smooth_l1_loss(q_taken, td_target, reduction="none")
        else:
            per_sample = F.mse_loss(q_taken, td_target, reduction="none")
        loss = per_sample.mean() if weights is None else (weights * per_sample).mean()

        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip_norm is None:
            grad_norm = torch.nn.utils.get_total_norm(
                [p.grad for p in self._online_params if p.grad is not None]
            )
        else:
            grad_norm = torch.nn.utils.clip_grad_norm_(self._online_params, cfg.grad_clip_norm)

        td = (td_target - q_taken).detach()
        stats = torch.stack([loss.detach(), q_taken.detach().mean(), grad_norm.to(loss.dtype)])
        # One device-to-host transfer per update: TD errors and the three scalars together.
        host = torch.cat([td, stats]).cpu().numpy().astype(np.float64)
        if np.isfinite(host).all():
            self.optimizer.step()
        else:
            self.optimizer.zero_grad(set_to_none=True)
        return host

    def _update_target(self) -> None:
        with torch.no_grad():
            if self.config.target_update == "soft":
                # lerp_(end, w): theta' + w * (theta - theta') = tau*theta + (1-tau)*theta'
                torch._foreach_lerp_(self._target_params, self._online_params, self.config.tau)
            elif self.updates % self.config.target_sync_every == 0:
                self.sync_target()

    def sync_target(self) -> None:
        """Hard copy: theta' <- theta."""
        with torch.no_grad():
            torch._foreach_copy_(self._target_params, self._online_params)

    # ----------------------------------------------------------- persistence
    def state_dict(self) -> dict[str, Any]:
        """Online, target, optimizer, update count, exploration RNG state and shape/config echo.

        Only tensors, numbers, strings, ``None`` and containers, so
        ``torch.load(..., weights_only=True)`` can read a saved copy.
        """
        rng_state = self._rng.bit_generator.state
        return {
            "online": self.online.state_dict(),
            "target": self.target.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "updates": self.updates,
            "explore_rng": {
                "bit_generator": rng_state["bit_generator"],
                "state": str(rng_state["state"]["state"]),
                "inc": str(rng_state["state"]["inc"]),
                "has_uint32": int(rng_state["has_uint32"]),
                "uinteger": int(rng_state["uinteger"]),
            },
            "obs_dim": self.obs_dim,
            "n_actions": self.n_actions,
            "config": asdict(self.config),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`, checked whole first (`check_state`): a state this
        agent could not have saved raises ``ValueError`` naming what is wrong, and nothing
        changes."""
        self.check_state(state)
        self.online.load_state_dict(state["online"])
        self.target.load_state_dict(state["target"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self._fused is not None:
            self._fused.rebind()
        self.updates = int(state["updates"])
        self._rng.bit_generator.state = explore_rng_state(state["explore_rng"])

    def check_state(self, state: Any) -> None:
        """Raise ``ValueError`` naming the first thing wrong with a :meth:`state_dict` read back
        from a checkpoint; changes nothing (`rdqn.learn.agent_state.check_agent_state`)."""
        check_agent_state(self, state)
