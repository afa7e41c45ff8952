"""The stored transitions themselves, as the memory explorer ("Memories replayed") shows them.

`memories(trainer)` reads a trainer's replay memory, without drawing from it or changing it:

- a thinned set of stored transitions for the charts, `MEMORY_POINTS` at most: every listed one,
  the highest priorities (`TOP_SHARE` of them), and a uniform sample of the rest (a generator
  of its own, seeded by the step); its numbers are exact, only the set is thinned;
- for each: its pose (`rdqn.envs.poses`), action, reward, terminal mark, stored priority p
  (|δ| + eps from its last replay; the largest priority so far for one never replayed; none under
  uniform replay), P(i), IS weight w_i (`ReplayBuffer.importance_weights` at the current β), age in
  writes, and times replayed;
- three lists: the last batch, the top `LISTED` by priority, and a uniform sample for contrast,
  each row with the TD error's terms by the current networks (`DQNAgent.td_terms`);
- uniform replay's expected times replayed by age (`rdqn.training.replay_expectation`).

For sequence replay (R2D2's, `rdqn.replay.SequenceReplay`) `memories` gives the same three lists
of stored sequences instead (`SequenceMemories`): each sequence's length, burn-in, priority p,
P(i), IS weight and age, and the |δ_t| of its steps by the current networks
(`rdqn.learn.sequence_update.sequence_td`) with the priority they would mix now.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from rdqn.envs.poses import POSE_NAMES, pose_kind, poses
from rdqn.replay.priorities import mass, sequence_priority
from rdqn.training.memory_view import Memories, MemoryRows, SequenceMemories, SequenceRows
from rdqn.training.replay_expectation import expected_uniform_replays

if TYPE_CHECKING:
    from rdqn.training.trainer import Trainer

__all__ = ["LISTED", "MEMORY_POINTS", "memories", "stored_priorities"]

MEMORY_POINTS = 2_000
"""The most stored transitions the explorer's charts draw."""
LISTED = 12
"""Rows in each list (the last batch shows its first ones)."""
TOP_SHARE = 0.15
"""The share of the drawn points that are the highest priorities (the rest: a uniform sample)."""
AGE_POINTS = 200
"""Ages at which uniform replay's expectation is drawn."""


def stored_priorities(trainer: Trainer, size: int) -> NDArray[np.float64]:
    """p_i of the stored slots as the sampler keeps them: the rank sampler its |δ| (no eps), the
    proportional sampler's mass m_i = p_i^α inverted (α > 0); NaN where none is kept."""
    sampler = trainer.buffer.sampler
    if sampler.name == "rank":
        return np.asarray(sampler.priorities[:size], dtype=np.float64)
    if sampler.name == "proportional" and sampler.alpha > 0:
        leaves = sampler.tree.leaves(size)
        return mass(leaves, 1.0 / sampler.alpha)
    return np.full(size, np.nan)


def _rows(trainer: Trainer, slots: NDArray[np.int64], context: dict) -> MemoryRows:
    storage = trainer.buffer.storage
    width = int(np.prod(trainer.obs_shape))
    return MemoryRows(
        slots=slots,
        poses=poses(trainer.config.env.id, storage.obs[slots].reshape(-1, width)),
        actions=storage.actions[slots].astype(np.int64),
        rewards=storage.rewards[slots].astype(np.float64),
        terminated=storage.terminated[slots].copy(),
        priorities=context["priorities"][slots],
        probabilities=context["probabilities"][slots],
        weights=trainer.buffer.importance_weights(slots, context["beta"]),
        ages=trainer.buffer.ages(slots),
        replayed=context["replayed"][slots],
    )


def _terms(trainer: Trainer, slots: NDArray[np.int64]) -> dict[str, NDArray[np.float64]]:
    storage = trainer.buffer.storage
    obs, next_obs, _, _ = storage.windows(slots, trainer.config.replay.window)
    batch = SimpleNamespace(
        obs=obs.reshape(len(slots), obs.shape[1], *trainer.obs_shape),
        next_obs=next_obs.reshape(len(slots), next_obs.shape[1], *trainer.obs_shape),
        actions=storage.actions[slots].astype(np.int64),
        rewards=storage.rewards[slots],
        terminated=storage.terminated[slots],
        truncated=storage.truncated[slots],
        weights=None,
    )
    found = trainer.agent.td_terms(batch)
    return {name: getattr(found, name) for name in ("q_taken", "next_value", "target", "td_error")}


def _sequence_rows(trainer: Trainer, slots: NDArray[np.int64]) -> SequenceRows:
    """The sequences in ``slots`` with their numbers and their steps' |δ_t| now (no update)."""
    import torch

    from rdqn.learn.sequence_update import sequence_arrays, sequence_td

    replay, agent, config = trainer.buffer, trainer.agent, trainer.config.replay
    batch = replay.sequences(slots, trainer.beta)
    arrays = sequence_arrays(
        batch,
        obs_dim=agent.obs_dim,
        n_actions=agent.n_actions,
        gamma=agent.config.gamma,
        burn_in=config.burn_in,
        stored_state=config.stored_state,
        device=agent.device,
    )
    with torch.no_grad():
        td = sequence_td(agent.online, agent.target, arrays, double_dqn=agent.config.double_dqn)
    learned = td.mask.cpu().numpy()
    td_abs = (td.target - td.q_taken).abs().double().cpu().numpy()
    return SequenceRows(
        slots=slots,
        lengths=batch.lengths,
        starts_episode=batch.starts_episode,
        burn_ins=arrays.burn_in.cpu().numpy().astype(np.int64),
        priorities=stored_priorities(trainer, replay.index.used)[slots],
        probabilities=batch.probabilities,
        weights=batch.weights,
        ages=replay.ages(slots),
        td_abs=np.where(learned, td_abs, np.nan),
        mixed=sequence_priority(td_abs, learned, replay.priority_eta),
    )


def _still_stored(
    trainer: Trainer, stamps: NDArray[np.int64], live: NDArray[np.int64] | None = None
) -> NDArray[np.int64]:
    """The slots of the last batch that still hold what it drew (the memory may have reused a
    slot since: its stamp in ``stamps`` then differs), and are ``live`` where given (a
    sequence's slot can also have been emptied), in the batch's order."""
    batch = trainer.recorder.last_batch
    if batch is None:
        return np.zeros(0, np.int64)
    drawn = np.asarray(batch.indices, np.int64)
    kept = stamps[drawn] == batch.generations
    if live is not None:
        kept &= np.isin(drawn, live)
    return drawn[kept]


def _sequence_memories(trainer: Trainer, listed: int) -> SequenceMemories:
    replay, config = trainer.buffer, trainer.config
    live = replay.index.live_slots()
    rng = np.random.default_rng([trainer.env_steps, 0x3E3])  # its own: training's are untouched
    by_priority = live[np.argsort(-replay.probabilities()[live], kind="stable")]
    last = _still_stored(trainer, replay.index.number, live)[:listed]
    chosen = {
        "last batch": last if last.size else None,
        "top priority": None if replay.sampler.name == "uniform" else by_priority[:listed],
        "uniform sample": np.sort(rng.choice(live, min(listed, live.size), replace=False)),
    }
    return SequenceMemories(
        env_id=config.env.id,
        scheme=replay.sampler.name,
        env_steps=trainer.env_steps,
        updates=trainer.updates,
        size=len(replay),
        steps=replay.steps,
        capacity=replay.capacity,
        sequence_length=replay.sequence_length,
        overlap=replay.overlap,
        burn_in=config.replay.burn_in,
        stored_state=config.replay.stored_state,
        eta=replay.priority_eta,
        eps=config.replay.eps,
        beta=float(trainer.beta),
        lists={
            name: _sequence_rows(trainer, slots)
            for name, slots in chosen.items()
            if slots is not None
        },
    )


def memories(
    trainer: Trainer, *, points: int = MEMORY_POINTS, listed: int = LISTED
) -> Memories | SequenceMemories | None:
    """The explorer's view of ``trainer``'s replay memory now (of its sequences, for sequence
    replay); None while it holds nothing to draw."""
    buffer = trainer.buffer
    size = len(buffer)
    if size == 0:
        return None
    if trainer.sequences:
        return _sequence_memories(trainer, listed)
    config = trainer.config
    rng = np.random.default_rng([trainer.env_steps, 0x3E3])  # its own: training's are untouched
    context = {
        "priorities": stored_priorities(trainer, size),
        "probabilities": buffer.probabilities(),
        "replayed": buffer.sample_counts,
        "beta": trainer.beta,
    }
    by_priority = np.argsort(-context["probabilities"], kind="stable")
    last = _still_stored(trainer, buffer.storage.generation)[:listed]
    chosen = {
        "last batch": last if last.size else None,
        "top priority": None if buffer.sampler.name == "uniform" else by_priority[:listed],
        "uniform sample": np.sort(rng.choice(size, min(listed, size), replace=False)),
    }
    lists = {
        name: _rows(trainer, slots, context) for name, slots in chosen.items() if slots is not None
    }
    terms = {name: _terms(trainer, rows.slots) for name, rows in lists.items()}
    keep = np.zeros(size, dtype=bool)
    for rows in lists.values():
        keep[rows.slots] = True
    keep[by_priority[: int(TOP_SHARE * points)]] = True
    rest = np.flatnonzero(~keep)
    room = max(0, points - int(keep.sum()))
    keep[rng.choice(rest, min(room, rest.size), replace=False)] = True
    ages = np.unique(np.linspace(0, size - 1, min(AGE_POINTS, size)).astype(np.int64))
    train = config.train
    return Memories(
        env_id=config.env.id,
        scheme=buffer.sampler.name,
        env_steps=trainer.env_steps,
        updates=trainer.updates,
        size=size,
        capacity=buffer.capacity,
        batch_size=config.replay.batch_size,
        beta=float(context["beta"]),
        gamma=float(config.agent.gamma),
        alpha=getattr(buffer.sampler, "alpha", None),
        eps=float(config.replay.eps),
        double_dqn=bool(config.agent.double_dqn),
        is_normalization=config.replay.is_normalization,
        pose_names=POSE_NAMES[pose_kind(config.env.id)],
        row_size=int(np.prod(trainer.obs_shape)) if pose_kind(config.env.id) == "row" else None,
        drawn=_rows(trainer, np.flatnonzero(keep).astype(np.int64), context),
        lists=lists,
        terms=terms,
        expected_ages=ages,
        expected_replays=expected_uniform_replays(
            ages,
            buffer.storage.writes,
            capacity=buffer.capacity,
            batch_size=config.replay.batch_size,
            learning_starts=train.learning_starts,
            train_every=train.train_every,
        ),
    )
