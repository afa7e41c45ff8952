"""When a run plays a greedy episode for its watchers, and the greedy returns it has played.

`EpisodeWatcher` stands beside a `Trainer` and plays (`rdqn.training.greedy.play_greedy`) with
the trainer's current policy, on an env of its own:

- the first time it is asked (the untrained policy, what a class sees first);
- then after every `every_episodes` finished training episodes, but at most once every
  `min_seconds` of wall time (an episode of CartPole takes 10 s to watch at its own pace: more
  would be played for nobody, and cost training time);
- whenever asked to (`play_now`: "Play an episode now"), also while the run is paused or over.

It keeps the latest episode and the curve of greedy returns against the training's env steps, and
hands each episode to ``on_played`` (the run's record keeps them: `rdqn.runs.lifecycle`). A
resumed run's watcher goes on from the curve its record kept (``earlier``). Nothing here is part
of the trainer's state or its checkpoint: a run trains the same, step for step, watched or not.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from rdqn.training.episodes import GreedyReturns, PlayedEpisode

if TYPE_CHECKING:
    from rdqn.training.trainer import Trainer

__all__ = ["EpisodeWatcher", "GreedyCurve", "watch_seed"]

WATCH_SEED_OFFSET = 1_000_003
"""Watched episodes reset their env with seeds of their own, far from the training env's seed and
from `Trainer.evaluate`'s (10,000 on)."""


def watch_seed(run_seed: int, played: int) -> int:
    """The env seed of a run's ``played``-th watched episode (0, 1, …)."""
    return WATCH_SEED_OFFSET + 7_919 * run_seed + played


EVERY_EPISODES = 5
MIN_SECONDS = 5.0


class GreedyCurve:
    """The greedy returns played so far: (env steps, return, length) per episode."""

    def __init__(self, earlier: GreedyReturns | None = None) -> None:
        self.env_steps: list[int] = [] if earlier is None else earlier.env_steps.tolist()
        self.returns: list[float] = [] if earlier is None else earlier.returns.tolist()
        self.lengths: list[int] = [] if earlier is None else earlier.lengths.tolist()

    def add(self, episode: PlayedEpisode) -> None:
        self.env_steps.append(episode.env_steps)
        self.returns.append(episode.episode_return)
        self.lengths.append(episode.length)

    def snapshot(self) -> GreedyReturns:
        """Copies, safe to hand to another thread."""
        return GreedyReturns(
            env_steps=np.asarray(self.env_steps, dtype=np.int64),
            returns=np.asarray(self.returns, dtype=np.float64),
            lengths=np.asarray(self.lengths, dtype=np.int64),
        )


class EpisodeWatcher:
    """Plays greedy episodes of ``trainer``'s policy at the cadence above; ``earlier``: the
    greedy returns the run played before it was resumed; ``on_played(n, episode)`` is told of
    each episode, the run's ``n``-th (0, 1, …)."""

    def __init__(
        self,
        trainer: Trainer,
        *,
        every_episodes: int = EVERY_EPISODES,
        min_seconds: float = MIN_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        earlier: GreedyReturns | None = None,
        on_played: Callable[[int, PlayedEpisode], None] | None = None,
    ) -> None:
        self.trainer = trainer
        self.every_episodes = every_episodes
        self.min_seconds = min_seconds
        self._clock = clock
        self.latest: PlayedEpisode | None = None
        self.curve = GreedyCurve(earlier)
        self.played = 0 if earlier is None else len(earlier)
        self._on_played = on_played
        self._episodes_at_last: int | None = None
        self._time_at_last = float("-inf")

    def due(self) -> bool:
        """Whether the cadence calls for an episode now."""
        if self._episodes_at_last is None:
            return True
        return (
            self.trainer.episodes - self._episodes_at_last >= self.every_episodes
            and self._clock() - self._time_at_last >= self.min_seconds
        )

    def maybe_play(self) -> PlayedEpisode | None:
        """Play an episode if one is `due`; the episode, or None."""
        return self.play_now() if self.due() else None

    def play_now(self) -> PlayedEpisode:
        """Play one greedy episode with the trainer's current policy, and keep it."""
        trainer = self.trainer
        episode = trainer.greedy_episode(watch_seed(trainer.config.seed, self.played))
        if self._on_played is not None:
            self._on_played(self.played, episode)
        self.played += 1
        self.latest = episode
        self.curve.add(episode)
        self._episodes_at_last = trainer.episodes
        self._time_at_last = self._clock()
        return episode
