"""A synthetic high-frequency market: trade one asset flat / long / short on a seeded price path.

Price process (one path per episode, drawn from the env's ``np_random``, so a seed fixes it). The
log price ``x_t = log p_t`` is a discretized Ornstein-Uhlenbeck process around ``log
initial_price`` whose volatility switches between a calm and a stormy regime::

    x_{t+1} = x_t + kappa * (mu - x_t) + sigma[z_t] * eps_t,   eps_t ~ N(0, 1),  mu = x_0
    z_{t+1} = z_t with probability 1 - switch_probability, else 1 - z_t   (z_0 uniform on {0, 1})

with ``kappa = mean_reversion`` and ``sigma = (calm_volatility, stormy_volatility)``. Mean reversion
makes returns negatively autocorrelated, so the recent returns carry a (small) tradeable signal.
Instead of simulating, the env can replay a user-supplied price series (``prices=``, e.g. from
:func:`load_prices_csv`); each episode then starts at a random offset drawn from ``np_random``
(always 0 when the series is exactly as long as one episode needs).

Actions (``Discrete(3)``): 0 flat, 1 long, 2 short; the action *sets* the position to 0, +1 or -1.
Reward for the step from t to t+1, with ``position`` the position after the action::

    reward_t = position * (p_{t+1} - p_t) - cost * p_t * |position - previous_position|

``cost`` is a proportional transaction cost (default 1e-4, one basis point of the traded value per
unit of position changed); going from long to short changes the position by 2 and pays twice.
Rewards are in price units (profit and loss of one unit of the asset).

Observation (float32, length ``n_returns + 1``): the last ``n_returns`` log returns
``log(p_k / p_{k-1})`` for ``k = t-n_returns+1 .. t``, oldest first, followed by the current
position. Time order is already encoded, so an MLP sees a short history and a recurrent net can
see more through a window. ``n_returns`` warm-up prices precede the first decision, so the first
observation is full. Log returns are about 1e-3 in size with the default process: agents may
want to normalize their inputs.

There is no failure state: an episode is *truncated* after ``episode_length`` steps and never
terminates.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import ArrayLike, NDArray

from rdqn.envs.prices_csv import PRICE_RANGE
from rdqn.validation import check_integer, check_probability, check_real

POSITIONS = (0, 1, -1)
"""Position set by each action: 0 flat, 1 long, 2 short."""


def _validate_prices(prices: ArrayLike) -> NDArray[np.float64]:
    """Return ``prices`` as a read-only float64 vector, or raise ``ValueError`` naming the index."""
    try:
        array = np.array(prices, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"prices must be numbers, got {str(prices)[:80]!r} ({err})") from None
    if array.ndim != 1:
        raise ValueError(f"prices must be one-dimensional, got shape {array.shape}")
    low, high = PRICE_RANGE
    bad = np.flatnonzero(~np.isfinite(array) | (array < low) | (array > high))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"prices must be finite, in [{low:g}, {high:g}], got prices[{i}] = {array[i]}"
        )
    array.setflags(write=False)
    return array


class SyntheticMarketEnv(gym.Env[NDArray[np.float32], np.int64]):
    """Flat / long / short trading on a regime-switching mean-reverting price (module docstring)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        *,
        prices: ArrayLike | None = None,
        episode_length: int = 500,
        n_returns: int = 8,
        cost: float = 1e-4,
        initial_price: float = 100.0,
        mean_reversion: float = 0.05,
        calm_volatility: float = 0.001,
        stormy_volatility: float = 0.004,
        switch_probability: float = 0.01,
    ) -> None:
        """Configure the market.

        Args:
            prices: a price series to replay instead of simulating (in `PRICE_RANGE`, at least
                ``n_returns + episode_length + 1`` values).
            episode_length: decisions per episode before truncation.
            n_returns: log returns in each observation.
            cost: proportional transaction cost per unit of position changed.
            initial_price: simulated start price, also the level prices revert to.
            mean_reversion: OU pull kappa in (0, 1] per step toward log(initial_price).
            calm_volatility: per-step standard deviation of log price in the calm regime.
            stormy_volatility: the same in the stormy regime.
            switch_probability: per-step probability of switching regime.
        """
        check_integer("episode_length", episode_length, minimum=1)
        check_integer("n_returns", n_returns, minimum=1)
        check_real("cost", cost, minimum=0.0)
        check_real("initial_price", initial_price, minimum=0.0, open_minimum=True)
        check_real("mean_reversion", mean_reversion, minimum=0.0, maximum=1.0, open_minimum=True)
        check_real("calm_volatility", calm_volatility, minimum=0.0)
        check_real("stormy_volatility", stormy_volatility, minimum=0.0)
        check_probability("switch_probability", switch_probability)

        self.episode_length = int(episode_length)
        self.n_returns = int(n_returns)
        self.cost = float(cost)
        self.initial_price = float(initial_price)
        self.mean_reversion = float(mean_reversion)
        self.volatilities = (float(calm_volatility), float(stormy_volatility))
        self.switch_probability = float(switch_probability)
        # Prices one episode reads: the warm-up, one per decision, and the final price.
        self.path_length = self.n_returns + self.episode_length + 1

        self.prices: NDArray[np.float64] | None = None
        if prices is not None:
            self.prices = _validate_prices(prices)
            if self.prices.size < self.path_length:
                raise ValueError(
                    f"prices has {self.prices.size} values; an episode needs n_returns + "
                    f"episode_length + 1 = {self.path_length} (supply more prices or lower "
                    "episode_length)"
                )

        bound = np.finfo(np.float32).max
        low = np.full(self.n_returns + 1, -bound, dtype=np.float32)
        high = np.full(self.n_returns + 1, bound, dtype=np.float32)
        low[-1], high[-1] = -1.0, 1.0
        self.observation_space = spaces.Box(low, high, dtype=np.float32)
        self.action_space = spaces.Discrete(3)

        self._path = np.empty(0, dtype=np.float64)
        self._log_returns = np.empty(0, dtype=np.float64)
        self._regimes = np.empty(0, dtype=np.int64)
        self._t = 0
        self._steps = 0
        self._position = 0
        self._ready = False

    def simulate(
        self, rng: np.random.Generator, length: int
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Draw ``length`` prices of the regime-switching OU process and their regimes (0 calm)."""
        first = rng.integers(0, 2)
        switches = rng.random(length - 1) < self.switch_probability
        regimes = (first + np.concatenate(([0], np.cumsum(switches)))) % 2
        shocks = np.asarray(self.volatilities)[regimes[:-1]] * rng.standard_normal(length - 1)
        mu = np.log(self.initial_price)
        log_prices = np.empty(length, dtype=np.float64)
        log_prices[0] = mu
        for k in range(length - 1):
            log_prices[k + 1] = (
                log_prices[k] + self.mean_reversion * (mu - log_prices[k]) + shocks[k]
            )
        return np.exp(log_prices), regimes.astype(np.int64)

    @property
    def episode_prices(self) -> NDArray[np.float64]:
        """A copy of this episode's prices (``n_returns`` warm-up prices, then one per step)."""
        return self._path.copy()

    def _obs(self) -> NDArray[np.float32]:
        obs = np.empty(self.n_returns + 1, dtype=np.float32)
        obs[:-1] = self._log_returns[self._t - self.n_returns : self._t]
        obs[-1] = self._position
        return obs

    def _info(self) -> dict[str, Any]:
        regime = int(self._regimes[self._t]) if self._regimes.size else -1
        return {"price": float(self._path[self._t]), "position": self._position, "regime": regime}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.float32], dict[str, Any]]:
        """Draw (or pick from the supplied series) this episode's prices; start flat."""
        super().reset(seed=seed)
        if self.prices is None:
            self._path, self._regimes = self.simulate(self.np_random, self.path_length)
        else:
            offset = int(self.np_random.integers(0, self.prices.size - self.path_length + 1))
            self._path = self.prices[offset : offset + self.path_length]
            self._regimes = np.empty(0, dtype=np.int64)
        self._log_returns = np.diff(np.log(self._path))
        self._t = self.n_returns
        self._steps = 0
        self._position = 0
        self._ready = True
        return self._obs(), self._info()

    def step(
        self, action: np.int64 | int
    ) -> tuple[NDArray[np.float32], SupportsFloat, bool, bool, dict[str, Any]]:
        """Set the position, earn its PnL over one price step minus costs; truncate at the end."""
        if not self._ready:
            raise RuntimeError("step() called before reset() or after truncation; call reset()")
        if not self.action_space.contains(action):
            raise ValueError(f"action must be 0 (flat), 1 (long) or 2 (short), got {action!r}")
        position = POSITIONS[int(action)]
        price, next_price = self._path[self._t], self._path[self._t + 1]
        reward = position * (next_price - price) - self.cost * price * abs(
            position - self._position
        )
        self._position = position
        self._t += 1
        self._steps += 1
        truncated = self._steps >= self.episode_length
        self._ready = not truncated
        return self._obs(), float(reward), False, truncated, self._info()
