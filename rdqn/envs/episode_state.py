"""The state of an episode under way, so that a run stopped inside one goes on exactly.

An env's generator (``np_random``) is saved with the run; what else an episode under way needs
is the env's own dynamic state, listed here per env class: CartPole's physics (its
``steps_beyond_terminated`` is None until the episode ends, so not saved), the cliffwalk's cell,
the chain's position and step, the market's price path, regimes, clock and position; a MinAtar env
lists its game's own (`rdqn.envs.minatar.MinAtarEnv.episode_paths`: numbers, flags, frames and
lists of objects, each a list of numbers, or None where a slot is empty). The time
limit's count is the episode's steps so far (the trainer's count), set back on restore.

`episode_state` reads it; `check_episode_state` compares a saved one with the same env fresh
from a reset (same attributes, each of the same type, arrays of the same shape and dtype,
numbers finite): a checkpoint is a file anyone can edit; `load_episode_state` sets it.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from gymnasium.wrappers import TimeLimit

from rdqn.envs.blind_cliffwalk import BlindCliffwalkEnv
from rdqn.envs.masked_cartpole import MaskedCartPoleEnv
from rdqn.envs.minatar import MinAtarEnv
from rdqn.envs.sparse_chain import SparseChainEnv
from rdqn.envs.synthetic_market import SyntheticMarketEnv

__all__ = ["EPISODE_STATE", "check_episode_state", "episode_state", "load_episode_state"]

EPISODE_STATE: dict[type, tuple[str, ...]] = {
    CartPoleEnv: ("state",),
    MaskedCartPoleEnv: ("_cartpole.state",),
    BlindCliffwalkEnv: ("_state",),
    SparseChainEnv: ("_pos", "_t"),
    SyntheticMarketEnv: ("_path", "_log_returns", "_regimes", "_t", "_steps", "_position"),
}
"""What an episode under way changes in each env, as attribute paths of the unwrapped env."""


def _paths(env: gym.Env[Any, Any]) -> tuple[str, ...]:
    kind = type(env.unwrapped)
    if isinstance(env.unwrapped, MinAtarEnv):
        return env.unwrapped.episode_paths
    if kind not in EPISODE_STATE:
        raise TypeError(f"{kind.__name__} does not say what its episodes change (EPISODE_STATE)")
    return EPISODE_STATE[kind]


def _get(env: gym.Env[Any, Any], path: str) -> Any:  # noqa: ANN401
    value: Any = env.unwrapped
    for name in path.split("."):
        value = getattr(value, name)
    return value


def _set(env: gym.Env[Any, Any], path: str, value: Any) -> None:  # noqa: ANN401
    *parents, name = path.split(".")
    owner: Any = env.unwrapped
    for parent in parents:
        owner = getattr(owner, parent)
    setattr(owner, name, value)


def episode_state(env: gym.Env[Any, Any]) -> dict[str, Any]:
    """The env's own state in the episode under way: attribute path -> a copy of its value."""
    return {path: _copied(_get(env, path)) for path in _paths(env)}


def check_episode_state(env: gym.Env[Any, Any], state: Any) -> None:  # noqa: ANN401
    """``ValueError`` naming the attribute unless ``state`` is one `episode_state` of this env
    could give: the same attributes, each like the env's own (fresh from a reset) in type,
    shape and dtype, every number finite. Changes nothing."""
    if not isinstance(state, dict):
        raise ValueError(f"the env's episode state must be a dict, got {type(state).__name__}")
    paths = _paths(env)
    if sorted(state) != sorted(paths):
        raise ValueError(f"the env's episode state has {sorted(state)}; it must have {list(paths)}")
    for path in paths:
        like, value = _get(env, path), state[path]
        if isinstance(like, np.ndarray):
            same = (
                isinstance(value, np.ndarray)
                and value.shape == like.shape
                and value.dtype == like.dtype
                and (value.dtype.kind not in "fc" or bool(np.isfinite(value).all()))
            )
        elif isinstance(like, list):
            same = isinstance(value, list) and all(_plain(item) for item in value)
        elif isinstance(like, bool | np.bool_):
            same = isinstance(value, bool | np.bool_)
        elif isinstance(like, int | np.integer):
            same = isinstance(value, int | np.integer) and not isinstance(value, bool)
        else:
            same = isinstance(value, float) and math.isfinite(value)
        if not same:
            raise ValueError(
                f"the env's {path} is {_described(value)}; the env has {_described(like)}"
            )


def load_episode_state(env: gym.Env[Any, Any], state: dict[str, Any], steps: int) -> None:
    """Set the env to the episode under way that ``state`` (checked) describes, ``steps`` steps
    into it; the env must have been reset (its wrappers then allow a step)."""
    for path, value in state.items():
        _set(env, path, _copied(value))
    wrapper: Any = env
    while isinstance(wrapper, gym.Wrapper):
        if isinstance(wrapper, TimeLimit):
            wrapper._elapsed_steps = steps  # the limit counts the episode's steps
        wrapper = wrapper.env


def _plain(value: Any) -> bool:  # noqa: ANN401
    """Whether ``value`` is None, a flag, an integer, a finite float or a list of them (nested)."""
    if value is None or isinstance(value, bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, list) and all(_plain(item) for item in value)


def _copied(value: Any) -> Any:  # noqa: ANN401
    """A copy of ``value`` with numpy scalars as Python's (a MinAtar game's lists hold the
    ``np.int64`` its generator draws, which a checkpoint cannot store)."""
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value.item() if isinstance(value, np.generic) else value


def _described(value: Any) -> str:  # noqa: ANN401
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return f"{type(value).__name__} {value!r}"[:80]
