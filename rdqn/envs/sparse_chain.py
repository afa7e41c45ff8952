"""A 1-D sparse-reward chain, the deep-exploration chain of Osband et al. 2016 (arXiv:1602.04621).

::

    pos:    0      1      2    ...   n-2    n-1
          [0.001] start                    [goal: r = 1, terminated]

Positions ``0 .. n-1``; every episode starts at position 1. Action 0 moves left, action 1 moves
right (moving left at position 0 stays there). Rewards, for the position *after* the move:

* reaching ``n - 1`` pays 1 and terminates the episode;
* being at position 0 pays ``left_reward`` (default 0.001): a small, easy distractor that a
  dithering agent settles for. Pass ``left_reward=0.0`` for the purely sparse chain;
* everything else pays 0.

The episode is truncated (a time limit, not a failure) after ``max_steps`` steps; the default
``n + 9`` is Osband et al.'s horizon, enough to reach the goal with a few detours but not
enough for a random walk to find it often when n is large. The dynamics are deterministic.

Observation: one-hot of the current position (float32, length ``n``).
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from rdqn.validation import check_integer, check_real

LEFT = 0
RIGHT = 1
START = 1


class SparseChainEnv(gym.Env[NDArray[np.float32], np.int64]):
    """Chain of ``n`` positions with reward 1 at the right end (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self, n: int = 10, *, max_steps: int | None = None, left_reward: float = 0.001
    ) -> None:
        """Build the chain.

        Args:
            n: number of positions (>= 3, so the start is neither end).
            max_steps: steps before truncation; ``None`` means ``n + 9``.
            left_reward: reward for being at position 0 after a step (0 disables it).
        """
        self.n = check_integer("n", n, minimum=3)
        self.max_steps = (
            self.n + 9 if max_steps is None else check_integer("max_steps", max_steps, minimum=1)
        )
        self.left_reward = check_real("left_reward", left_reward)

        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.n,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._pos = START
        self._t = 0

    def _obs(self) -> NDArray[np.float32]:
        obs = np.zeros(self.n, dtype=np.float32)
        obs[self._pos] = 1.0
        return obs

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.float32], dict[str, Any]]:
        """Start at position 1. The dynamics are deterministic; ``seed`` seeds ``np_random``."""
        super().reset(seed=seed)
        self._pos = START
        self._t = 0
        return self._obs(), {"position": self._pos}

    def step(
        self, action: np.int64 | int
    ) -> tuple[NDArray[np.float32], SupportsFloat, bool, bool, dict[str, Any]]:
        """Move one position; terminate at the right end, truncate after ``max_steps`` steps."""
        if not self.action_space.contains(action):
            raise ValueError(f"action must be 0 (left) or 1 (right), got {action!r}")
        if int(action) == RIGHT:
            self._pos = min(self._pos + 1, self.n - 1)
        else:
            self._pos = max(self._pos - 1, 0)
        self._t += 1

        terminated = self._pos == self.n - 1
        if terminated:
            reward = 1.0
        elif self._pos == 0:
            reward = self.left_reward
        else:
            reward = 0.0
        truncated = not terminated and self._t >= self.max_steps
        return self._obs(), reward, terminated, truncated, {"position": self._pos}
