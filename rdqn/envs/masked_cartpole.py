"""Velocity-masked CartPole: a partially observed task where memory (a recurrent Q-network) matters.

The dynamics, actions (0 push left, 1 push right), reward (+1 per step) and termination (pole past
12 degrees or cart past 2.4) are gymnasium's ``CartPoleEnv``, unchanged. Only the observation is
reduced: of CartPole's state ``(x, x_dot, theta, theta_dot)`` the agent sees ``(x, theta)``, so the
velocities must be inferred from consecutive observations (a window of the same episode).

Registered as ``rdqn/MaskedCartPole-v0`` with ``max_episode_steps=500``, CartPole-v1's limit:
``gymnasium.make`` adds the ``TimeLimit`` wrapper, so step 500 is a *truncation* (bootstrapped),
while falling over is a *termination*. Constructed directly, the class has no time limit.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from numpy.typing import NDArray

VISIBLE = (0, 2)
"""Indices of CartPole's state that stay observable: cart position and pole angle."""


class MaskedCartPoleEnv(gym.Env[NDArray[np.float32], np.int64]):
    """CartPole with the two velocities removed from the observation (obs dim 2)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self) -> None:
        """Compose a gymnasium ``CartPoleEnv``; its random generator is this env's ``np_random``."""
        self._cartpole = CartPoleEnv()
        full = self._cartpole.observation_space
        assert isinstance(full, spaces.Box)
        self.observation_space = spaces.Box(
            low=full.low[list(VISIBLE)], high=full.high[list(VISIBLE)], dtype=np.float32
        )
        self.action_space = spaces.Discrete(2)

    @property
    def full_state(self) -> NDArray[np.float32]:
        """The hidden full state ``(x, x_dot, theta, theta_dot)``, for diagnostics and tests."""
        return np.array(self._cartpole.state, dtype=np.float32)

    def _mask(self, full_obs: NDArray[np.float32]) -> NDArray[np.float32]:
        return np.asarray(full_obs, dtype=np.float32)[list(VISIBLE)]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.float32], dict[str, Any]]:
        """Reset CartPole (uniform initial state in +-0.05, or ``options`` low/high) and mask it."""
        super().reset(seed=seed)
        # One generator for both: seeding this env seeds the physics' initial state.
        self._cartpole.np_random = self.np_random
        full_obs, info = self._cartpole.reset(options=options)
        return self._mask(full_obs), info

    def step(
        self, action: np.int64 | int
    ) -> tuple[NDArray[np.float32], SupportsFloat, bool, bool, dict[str, Any]]:
        """Step CartPole's physics and return the masked observation."""
        full_obs, reward, terminated, truncated, info = self._cartpole.step(action)
        return self._mask(full_obs), reward, terminated, truncated, info

    def close(self) -> None:
        """Close the inner CartPole."""
        self._cartpole.close()
