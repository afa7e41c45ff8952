"""A run's replay memory and one learner update, for either replay mode (`replay.mode`).

``windows`` (E14): a `ReplayBuffer` of transitions with windows of T observations; an update is
`DQNAgent.learn` on a batch of them and each transition gets |delta_i|. ``sequences`` (R2D2):
a `SequenceReplay` whose sequences keep the LSTM state the actor recorded; an update is
`DQNAgent.learn_sequences` after the burn-in, and each sequence gets the eta-mixed |delta| of
the steps it learned from (`rdqn.replay.priorities.sequence_priority`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import DTypeLike, NDArray

from rdqn.config import RunConfig
from rdqn.learn.agent import DQNAgent, LearnResult
from rdqn.learn.nets import STATE_SIZE
from rdqn.learn.sequence_update import SequenceLearnResult
from rdqn.replay import Batch, ReplayBuffer, Sampler, SequenceBatch, SequenceReplay
from rdqn.replay.priorities import sequence_priority
from rdqn.replay.scheme_registry import scheme
from rdqn.training.timings import SAMPLE, UPDATE, Timings

__all__ = ["Update", "build_replay", "build_sampler", "update"]


def build_sampler(config: RunConfig) -> Sampler:
    """The sampler a config asks for (`rdqn.replay.scheme_registry`)."""
    return scheme(config.replay.scheme).build(config.replay)


def build_replay(
    config: RunConfig, obs_shape: tuple[int, ...], obs_dtype: DTypeLike, seed: int
) -> ReplayBuffer | SequenceReplay:
    """The replay memory of a run of ``config`` (module docstring)."""
    replay = config.replay
    if replay.mode == "sequences":
        return SequenceReplay(
            replay.capacity,
            obs_shape,
            sequence_length=replay.sequence_length,
            overlap=replay.sequence_overlap,
            state_size=STATE_SIZE if replay.stored_state else 0,
            sampler=build_sampler(config),
            priority_eta=replay.priority_eta,
            seed=seed,
            obs_dtype=obs_dtype,
        )
    return ReplayBuffer(
        replay.capacity,
        obs_shape,
        window=replay.window,
        sampler=build_sampler(config),
        seed=seed,
        obs_dtype=obs_dtype,
    )


@dataclass(frozen=True)
class Update:
    """What one update drew and learned: the batch, the learner's result, |delta| per row of
    the batch (a sequence's: the priority it was given) and the mean |delta| over the steps
    learned from."""

    batch: Batch | SequenceBatch
    result: LearnResult | SequenceLearnResult
    td_abs: NDArray[np.float64]
    td_abs_mean: float


def update(
    buffer: ReplayBuffer | SequenceReplay,
    agent: DQNAgent,
    config: RunConfig,
    beta: float,
    timings: Timings,
) -> Update:
    """Sample a batch with IS exponent ``beta``, learn from it, give its rows their priorities
    (sampling and priorities timed as `SAMPLE`, learning as `UPDATE`). `DivergenceError` from
    the learner passes on, the priorities untouched."""
    replay = config.replay
    with timings.measure(SAMPLE):
        batch = buffer.sample(replay.batch_size, beta=beta)
    if isinstance(batch, SequenceBatch):
        assert isinstance(buffer, SequenceReplay)
        with timings.measure(UPDATE):
            learned = agent.learn_sequences(
                batch, burn_in=replay.burn_in, stored_state=replay.stored_state
            )
        td_abs = np.abs(learned.td_errors)
        with timings.measure(SAMPLE):
            buffer.update_priorities(batch, td_abs, learned.mask)
        rows = sequence_priority(td_abs, learned.mask, replay.priority_eta)
        return Update(batch, learned, rows, float(td_abs[learned.mask].mean()))
    assert isinstance(buffer, ReplayBuffer)
    with timings.measure(UPDATE):
        result = agent.learn(batch)
    td_abs = np.abs(result.td_errors)
    with timings.measure(SAMPLE):
        buffer.update_priorities(batch, td_abs)
    return Update(batch, result, td_abs, float(td_abs.mean()))
