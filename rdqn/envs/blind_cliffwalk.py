"""Blind Cliffwalk: the figure-1 task of Schaul et al. 2015 (arXiv:1511.05952).

::

    s=0 --right--> s=1 --right--> ... --right--> s=n-1 --right--> goal (r = 1, terminated)
     |              |                              |
   wrong          wrong                          wrong
     v              v                              v
    cliff (r = 0, terminated)

There are ``n`` states in a line and two actions. In state ``s`` exactly one action,
``right_actions[s]``, is "right": it moves the agent to ``s + 1`` with reward 0, and from the last
state ``n - 1`` it reaches the goal with reward 1. The other action falls off the cliff: the episode
terminates with reward 0. Every episode starts in state 0, so a uniformly random policy reaches the
reward with probability ``2**-n``; that rare, informative transition is what prioritized replay is
meant to find. Episodes last at most ``n`` steps by construction, so the task never truncates.

Which action is "right" differs from state to state, so that an approximator cannot generalize it
(the paper: "a representation such that generalizing over what action is 'right' is not possible").
By default the pattern is drawn once, at construction, from ``np.random.default_rng(layout_seed)``;
it is fixed for the life of the env and independent of ``reset(seed=...)``. Pass ``right_actions``
to choose it explicitly (e.g. all ones for the "always press the same button" variant).

Observation: the one-hot encoding of the current state (float32, length ``n``). Once the episode
has terminated (cliff or goal) the next observation is the all-zeros vector: the absorbing terminal
state has no index, and a terminated transition is never bootstrapped from anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from rdqn.validation import check_integer, check_probability


class BlindCliffwalkEnv(gym.Env[NDArray[np.float32], np.int64]):
    """Blind Cliffwalk(n) with a fixed per-state "right" action (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        n: int = 8,
        *,
        layout_seed: int = 0,
        right_actions: Sequence[int] | None = None,
    ) -> None:
        """Build the chain.

        Args:
            n: number of states (>= 2); n correct actions in a row earn the reward.
            layout_seed: seed of the per-state "right" action pattern (ignored when
                ``right_actions`` is given).
            right_actions: explicit pattern, one action in {0, 1} per state.
        """
        self.n = check_integer("n", n, minimum=2)
        if right_actions is None:
            pattern = np.random.default_rng(layout_seed).integers(0, 2, size=self.n)
        else:
            pattern = np.asarray(right_actions)
            if pattern.shape != (self.n,) or not np.isin(pattern, (0, 1)).all():
                raise ValueError(
                    f"right_actions must hold {self.n} values in {{0, 1}}, "
                    f"got {list(right_actions)}"
                )
        self.right_actions: NDArray[np.int64] = pattern.astype(np.int64)
        self.right_actions.setflags(write=False)

        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.n,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._state = 0
        self._done = False

    def _obs(self) -> NDArray[np.float32]:
        obs = np.zeros(self.n, dtype=np.float32)
        if not self._done:
            obs[self._state] = 1.0
        return obs

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.float32], dict[str, Any]]:
        """Start in state 0. The dynamics are deterministic; ``seed`` only seeds ``np_random``."""
        super().reset(seed=seed)
        self._state = 0
        self._done = False
        return self._obs(), {"state": self._state}

    def step(
        self, action: np.int64 | int
    ) -> tuple[NDArray[np.float32], SupportsFloat, bool, bool, dict[str, Any]]:
        """Take ``action``: the right one advances (reward 1 past the end), the other ends."""
        if self._done:
            raise RuntimeError("step() called after the episode terminated; call reset() first")
        if not self.action_space.contains(action):
            raise ValueError(f"action must be 0 or 1, got {action!r}")
        reward = 0.0
        if int(action) != self.right_actions[self._state]:
            self._done = True
        elif self._state == self.n - 1:
            self._done = True
            reward = 1.0
        else:
            self._state += 1
        return self._obs(), reward, self._done, False, {"state": self._state}

    def optimal_q_values(self, gamma: float) -> NDArray[np.float64]:
        """The true Q* table, shape (n, 2), indexed ``[state, action]``.

        The right action in state s earns 1 after ``n - s`` steps, so Q*(s, right) = gamma^(n-1-s);
        the wrong action terminates with reward 0, so Q*(s, wrong) = 0. Used to measure learning
        (the paper's figure 1 reports the error of Q against this table).
        """
        gamma = check_probability("gamma", gamma)
        q = np.zeros((self.n, 2), dtype=np.float64)
        q[np.arange(self.n), self.right_actions] = gamma ** np.arange(self.n - 1, -1, -1.0)
        return q
