"""Greedy evaluation: the policy's return on held-out env seeds, every K env steps.

A run's training returns are those of its ε-greedy behaviour on the training env's episodes. Every
``train.eval_every`` env steps (0: never) the trainer plays ``train.eval_episodes`` episodes of
its greedy policy, a = argmax_a Q(W_t, a), each on an env of its own reset with a held-out seed:
`EVAL_SEED`, `EVAL_SEED` + 1, … The same seeds at every evaluation and in every run, so two points
differ by the policy alone and runs are compared on one test set; far from the training env's
seed (the run's) and from the watched episodes' (`rdqn.training.watcher`). Nothing of training is
touched: a run trains the same, step for step, evaluated or not. The evaluation at step t is
the mean return R̄_t = (1/n) Σ_k G_k over its n episodes; each episode's return and length is
recorded with the run (the store's ``evaluations`` table).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rdqn.training.episodes import PlayedEpisode

__all__ = ["EVAL_SEED", "Evaluations", "evaluation_seeds"]

EVAL_SEED = 10_000
"""The first held-out env seed of an evaluation."""


def evaluation_seeds(episodes: int) -> range:
    """The held-out env seeds of an evaluation of ``episodes`` episodes."""
    return range(EVAL_SEED, EVAL_SEED + episodes)


@dataclass(frozen=True)
class Evaluations:
    """A run's greedy evaluations: the env steps of each, and its episodes' returns and lengths
    (one row per evaluation, one column per held-out seed). Immutable; `add` gives a new one."""

    env_steps: NDArray[np.int64]
    returns: NDArray[np.float64]
    lengths: NDArray[np.int64]

    @classmethod
    def none(cls, episodes: int) -> Evaluations:
        return cls(
            np.zeros(0, np.int64),
            np.zeros((0, episodes), np.float64),
            np.zeros((0, episodes), np.int64),
        )

    def __len__(self) -> int:
        return int(self.env_steps.shape[0])

    @property
    def means(self) -> NDArray[np.float64]:
        """R̄_t of each evaluation: the mean of its episodes' returns."""
        return self.returns.mean(axis=1) if len(self) else np.zeros(0, np.float64)

    def add(self, env_steps: int, episodes: Sequence[PlayedEpisode]) -> Evaluations:
        """These and the evaluation at ``env_steps`` of ``episodes`` (one per seed, in order)."""
        return Evaluations(
            np.append(self.env_steps, np.int64(env_steps)),
            np.vstack([self.returns, [[e.episode_return for e in episodes]]]),
            np.vstack([self.lengths, [[e.length for e in episodes]]]).astype(np.int64),
        )

    @classmethod
    def from_rows(
        cls,
        env_steps: NDArray[np.int64],
        episode: NDArray[np.int64],
        returns: NDArray[np.float64],
        lengths: NDArray[np.int64],
        episodes: int,
    ) -> Evaluations:
        """The evaluations of stored rows (one per episode, ordered by env step then episode):
        only those whose ``episodes`` episodes are all there."""
        steps = np.unique(env_steps)
        whole = [s for s in steps if np.array_equal(episode[env_steps == s], np.arange(episodes))]
        if not whole:
            return cls.none(episodes)
        rows = np.isin(env_steps, whole)
        return cls(
            np.asarray(whole, np.int64),
            returns[rows].reshape(len(whole), episodes).astype(np.float64),
            lengths[rows].reshape(len(whole), episodes).astype(np.int64),
        )

    def until(self, env_steps: int) -> Evaluations:
        """Those of the policies of env step ``env_steps`` or earlier."""
        kept = self.env_steps <= env_steps
        return Evaluations(self.env_steps[kept], self.returns[kept], self.lengths[kept])
