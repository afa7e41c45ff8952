"""What each env accepts in ``env.kwargs``, and its observation size, known without building it.

``env.kwargs`` is user input (a JSON object on the command line, a URL, a form), so `make_env`
checks its *names* before it builds anything (`check_env_kwargs`): the env constructor's keyword
arguments, plus

* ``max_episode_steps``: gymnasium's time limit (an integer >= 1; truncates episodes there);
* ``prices_csv`` (``rdqn/SyntheticMarket-v0`` only): the path of a prices CSV, read with
  `rdqn.envs.load_prices_csv` when the env is made.

``render_mode`` is refused (rdqn trains without a screen: "human" would open a window on the
server, or fail for want of pygame), and so is every name the env does not know, with the list of
the ones it does. Values are checked by the env itself when it is built.

`observation_size` is the length of an observation for given kwargs (CartPole 4, masked CartPole
2, Blind Cliffwalk and the sparse chain ``n``, the market ``n_returns + 1``, a MinAtar frame
10 x 10 x its channels): what the server's
memory estimate needs before anything is allocated (`rdqn.limits`).
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from rdqn.envs.blind_cliffwalk import BlindCliffwalkEnv
from rdqn.envs.masked_cartpole import MaskedCartPoleEnv
from rdqn.envs.minatar import MINATAR_CHANNELS, MINATAR_ENVS, MISSING_EXTRA
from rdqn.envs.sparse_chain import SparseChainEnv
from rdqn.envs.synthetic_market import SyntheticMarketEnv
from rdqn.validation import check_integer, shown

__all__ = ["ENV_CLASSES", "check_env_kwargs", "env_options", "observation_size"]

ENV_CLASSES: dict[str, type] = {
    "CartPole-v1": CartPoleEnv,
    "rdqn/MaskedCartPole-v0": MaskedCartPoleEnv,
    "rdqn/BlindCliffwalk-v0": BlindCliffwalkEnv,
    "rdqn/SparseChain-v0": SparseChainEnv,
    "rdqn/SyntheticMarket-v0": SyntheticMarketEnv,
    **MINATAR_ENVS,
}
"""The class behind each env id (in `rdqn.envs.ENV_IDS` order)."""

REFUSED: dict[str, str] = {
    "render_mode": "rdqn trains without rendering (no window, no video)",
    "disable_env_checker": "gymnasium's env checker stays on",
}
"""Names gymnasium or an env would take that rdqn refuses, and why."""

_MAKE_OPTIONS = ("max_episode_steps",)
_FILE_OPTIONS: dict[str, tuple[str, ...]] = {"rdqn/SyntheticMarket-v0": ("prices_csv",)}


def _constructor_options(cls: type) -> tuple[str, ...]:
    parameters = inspect.signature(cls.__init__).parameters.values()
    return tuple(
        p.name
        for p in parameters
        if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    )


def env_options(env_id: str) -> tuple[str, ...]:
    """The names ``env.kwargs`` may use for ``env_id``."""
    if env_id not in ENV_CLASSES:
        raise ValueError(f"unknown env id {env_id!r}; allowed: {', '.join(ENV_CLASSES)}")
    names = [n for n in _constructor_options(ENV_CLASSES[env_id]) if n not in REFUSED]
    return (*names, *_FILE_OPTIONS.get(env_id, ()), *_MAKE_OPTIONS)


def check_env_kwargs(env_id: str, kwargs: Mapping[str, Any]) -> None:
    """``ValueError`` naming the option for a name ``env_id`` does not take (or that rdqn
    refuses), a ``max_episode_steps`` that is not an integer >= 1, a ``prices_csv`` that is not
    a path, or ``prices`` and ``prices_csv`` together; a MinAtar id without the optional
    ``minatar`` package is refused naming the extra."""
    allowed = env_options(env_id)
    if env_id in MINATAR_ENVS and importlib.util.find_spec("minatar") is None:
        raise ValueError(MISSING_EXTRA)
    for name in kwargs:
        if name in REFUSED:
            raise ValueError(
                f"env.kwargs.{name}={shown(kwargs[name])} is not supported: {REFUSED[name]}"
            )
        if name not in allowed:
            raise ValueError(
                f"env.kwargs has no option {name!r} for {env_id}; allowed: {', '.join(allowed)}"
            )
    if kwargs.get("max_episode_steps") is not None:
        check_integer("env.kwargs.max_episode_steps", kwargs["max_episode_steps"], minimum=1)
    if "prices_csv" in kwargs:
        path = kwargs["prices_csv"]
        if not isinstance(path, str) or not path:
            raise ValueError(f"env.kwargs.prices_csv must be the path of a CSV file, got {path!r}")
        if "prices" in kwargs:
            raise ValueError("env.kwargs takes prices or prices_csv, not both")


def _default(cls: type, name: str) -> Any:
    return inspect.signature(cls.__init__).parameters[name].default


def _size(env_id: str, name: str, offset: int = 0) -> Callable[[Mapping[str, Any]], int]:
    cls = ENV_CLASSES[env_id]

    def size(kwargs: Mapping[str, Any]) -> int:
        value = kwargs.get(name, _default(cls, name))
        return check_integer(f"env.kwargs.{name}", value, minimum=1) + offset

    return size


_OBSERVATION_SIZES: dict[str, Callable[[Mapping[str, Any]], int]] = {
    "CartPole-v1": lambda kwargs: 4,
    "rdqn/MaskedCartPole-v0": lambda kwargs: 2,
    "rdqn/BlindCliffwalk-v0": _size("rdqn/BlindCliffwalk-v0", "n"),
    "rdqn/SparseChain-v0": _size("rdqn/SparseChain-v0", "n"),
    "rdqn/SyntheticMarket-v0": _size("rdqn/SyntheticMarket-v0", "n_returns", offset=1),
    **{
        env_id: (lambda kwargs, n=MINATAR_CHANNELS[cls.game]: 100 * n)
        for env_id, cls in MINATAR_ENVS.items()
    },
}


def observation_size(env_id: str, kwargs: Mapping[str, Any]) -> int:
    """Values in one observation of ``env_id`` made with ``kwargs`` (nothing is built);
    ``ValueError`` naming the option when a size in ``kwargs`` is not a positive integer."""
    env_options(env_id)
    return _OBSERVATION_SIZES[env_id](kwargs)


def observation_itemsize(env_id: str) -> int:
    """Bytes per stored observation value of ``env_id``: 1 for MinAtar's frames of flags (the
    trainer stores a bool space as it comes), 4 (float32) for the others."""
    env_options(env_id)
    return 1 if env_id in MINATAR_ENVS else 4
