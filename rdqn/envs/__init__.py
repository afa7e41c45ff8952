"""The environments rdqn trains on, registered with gymnasium under the ``rdqn/`` namespace.

Importing this package registers them (``register_envs()`` is idempotent), so
``gymnasium.make("rdqn/BlindCliffwalk-v0", n=6)`` works after ``import rdqn.envs``. ``make_env``
is the checked entry point: it accepts only the ids in ``ENV_IDS`` and the options
`rdqn.envs.options` lists for each.

* ``CartPole-v1``: gymnasium's CartPole; ends on a fall, truncated at 500 steps.
* ``rdqn/MaskedCartPole-v0``: CartPole observing only (x, theta); same ends.
* ``rdqn/BlindCliffwalk-v0``: Schaul et al. 2015, figure 1; ends at the cliff or goal (<= n steps).
* ``rdqn/SparseChain-v0``: reward 1 at the chain's right end; goal, or truncated at max_steps.
* ``rdqn/SyntheticMarket-v0``: flat/long/short on a seeded price path; truncated at episode_length.
* ``rdqn/MinAtar-<Game>-v0``: the five MinAtar games (`rdqn.envs.minatar`; the optional ``minatar``
  package); end when the game does.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rdqn.envs.blind_cliffwalk import BlindCliffwalkEnv
from rdqn.envs.masked_cartpole import MaskedCartPoleEnv
from rdqn.envs.minatar import MINATAR_ENVS
from rdqn.envs.options import check_env_kwargs, env_options, observation_size
from rdqn.envs.prices_csv import CsvLimits, PriceSeries, load_prices_csv, read_prices_csv
from rdqn.envs.sparse_chain import SparseChainEnv
from rdqn.envs.synthetic_market import SyntheticMarketEnv

__all__ = [
    "ENV_IDS",
    "BlindCliffwalkEnv",
    "CsvLimits",
    "MaskedCartPoleEnv",
    "PriceSeries",
    "SparseChainEnv",
    "SyntheticMarketEnv",
    "check_env_kwargs",
    "env_options",
    "load_prices_csv",
    "make_env",
    "observation_size",
    "read_prices_csv",
    "register_envs",
    "reward_threshold",
]

_REGISTRATIONS: dict[str, dict[str, Any]] = {
    "rdqn/MaskedCartPole-v0": {
        "entry_point": "rdqn.envs.masked_cartpole:MaskedCartPoleEnv",
        "max_episode_steps": 500,
        "reward_threshold": 475.0,
    },
    "rdqn/BlindCliffwalk-v0": {"entry_point": "rdqn.envs.blind_cliffwalk:BlindCliffwalkEnv"},
    "rdqn/SparseChain-v0": {"entry_point": "rdqn.envs.sparse_chain:SparseChainEnv"},
    "rdqn/SyntheticMarket-v0": {"entry_point": "rdqn.envs.synthetic_market:SyntheticMarketEnv"},
    **{
        env_id: {"entry_point": f"rdqn.envs.minatar:{cls.__name__}"}
        for env_id, cls in MINATAR_ENVS.items()
    },
}
"""The rdqn envs. Only CartPole gets a registry time limit: the others end episodes themselves."""

ENV_IDS: tuple[str, ...] = ("CartPole-v1", *_REGISTRATIONS)
"""Every env id the project supports, gymnasium's CartPole first."""


def register_envs() -> None:
    """Register the ``rdqn/`` envs with gymnasium; ids already registered are left alone."""
    for env_id, kwargs in _REGISTRATIONS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, **kwargs)


def make_env(env_id: str, seed: int | None = None, **kwargs: Any) -> gym.Env[Any, Any]:
    """Make one of ``ENV_IDS`` with ``gymnasium.make(env_id, **kwargs)``.

    With a ``seed``, the env is reset once with ``reset(seed=seed)`` and its action and observation
    spaces are seeded, so everything that follows (the caller's own ``reset()`` calls included) is
    determined by the seed. A ``prices_csv`` path is read with `load_prices_csv` into ``prices``.
    Raises ``ValueError`` for an id outside ``ENV_IDS``, an option the env does not take
    (`check_env_kwargs`) or a value it rejects.
    """
    _check_env_id(env_id)
    check_env_kwargs(env_id, kwargs)
    register_envs()
    if "prices_csv" in kwargs:
        try:
            kwargs["prices"] = load_prices_csv(kwargs.pop("prices_csv"))
        except ValueError as err:
            raise ValueError(f"env.kwargs.prices_csv: {err}") from err
    try:
        env = gym.make(env_id, **kwargs)
    except (TypeError, ValueError) as err:  # the env's own checks of the values, or a bad type
        raise ValueError(f"env.kwargs rejected by {env_id}: {err}") from err
    if seed is not None:
        env.reset(seed=seed)
        env.action_space.seed(seed)
        env.observation_space.seed(seed)
    return env


def _check_env_id(env_id: str) -> None:
    if env_id not in ENV_IDS:
        raise ValueError(f"unknown env id {env_id!r}; allowed: {', '.join(ENV_IDS)}")


def reward_threshold(env_id: str) -> float | None:
    """The env's registered reward threshold ('solved': 475 for CartPole-v1), None if none."""
    _check_env_id(env_id)
    threshold = gym.spec(env_id).reward_threshold
    return None if threshold is None else float(threshold)


register_envs()
