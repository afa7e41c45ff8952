"""MinAtar (Young & Tian 2019, arXiv:1903.03176): five Atari games on 10x10 binary frames.

``rdqn/MinAtar-<Game>-v0`` for Asterix, Breakout, Freeway, Seaquest and SpaceInvaders: an
observation is the game's frame, ``(10, 10, n)`` booleans (n channels: one per kind of object),
the actions are the game's minimal action set (as the package's own ``MinAtar/<Game>-v1``), the
reward is the game's, and an episode ends when the game does (Freeway after 2,500 steps; the others
when the player dies). The defaults are the package's and the papers': sticky actions (the last
action is repeated with probability 0.1, a draw made every step) and difficulty ramping on.

The games' code is the ``minatar`` package's, an optional extra (``pip install -r
requirements-minatar.txt``); without it, making an env raises one line naming the extra. The
package's ``__init__`` imports matplotlib and seaborn for its display (1.6 s), which rdqn never
uses, so the game modules, which need only numpy, are loaded from its folder by path, and the
sticky-action wrapper (its ``Environment.act``) is this module's, the same draw for draw
(tests/envs/test_minatar.py plays both side by side).

Randomness: the game and the sticky actions draw from one ``np.random.RandomState`` built on
the env's ``np_random`` bit generator, so gymnasium's seeding (``reset(seed=...)``) fixes every
draw, and a run that saves and restores ``np_random`` (`rdqn.training.state.env_rng`) goes on
with the same draws. `episode_paths` lists what an episode under way changes
(`rdqn.envs.episode_state`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = [
    "MINATAR_ACTIONS",
    "MINATAR_CHANNELS",
    "MINATAR_ENVS",
    "MINATAR_MOVES",
    "MISSING_EXTRA",
    "MinAtarEnv",
    "channel_names",
]

MINATAR_CHANNELS: dict[str, int] = {
    "asterix": 4,
    "breakout": 4,
    "freeway": 7,
    "seaquest": 10,
    "space_invaders": 6,
}
"""Channels of each game's frame (the package's ``state_shape()[2]``)."""

MINATAR_ACTIONS: dict[str, tuple[int, ...]] = {
    "asterix": (0, 1, 2, 3, 4),
    "breakout": (0, 1, 3),
    "freeway": (0, 2, 4),
    "seaquest": (0, 1, 2, 3, 4, 5),
    "space_invaders": (0, 1, 3, 5),
}
"""Each game's minimal action set (the package's ``minimal_action_set()``): the moves its
actions 0, 1, ... make."""
MINATAR_MOVES: tuple[str, ...] = ("no-op", "← left", "↑ up", "→ right", "↓ down", "fire")
"""What the package's moves 0-5 are (its ``action_map``: n, l, u, r, d, f)."""

MISSING_EXTRA = (
    "MinAtar envs need the optional minatar package: pip install -r requirements-minatar.txt"
)
_CONSTANT = frozenset({"channels", "action_map", "random", "ramping"})
_modules: dict[str, ModuleType] = {}


def _game_module(game: str) -> ModuleType:
    """The package's module for ``game`` (``minatar/environments/<game>.py``), loaded once."""
    if game not in _modules:
        spec = importlib.util.find_spec("minatar")
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError(MISSING_EXTRA)
        path = Path(next(iter(spec.submodule_search_locations))) / "environments" / f"{game}.py"
        module_spec = importlib.util.spec_from_file_location(f"_rdqn_minatar_{game}", path)
        if module_spec is None or module_spec.loader is None or not path.is_file():
            raise ModuleNotFoundError(f"{MISSING_EXTRA} (the installed one has no {path.name})")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        _modules[game] = module
    return _modules[game]


def channel_names(game: str) -> tuple[str, ...]:
    """What each channel of ``game``'s frame shows ("paddle", "ball", ...), in channel order
    (the package's names, spelled out: Seaquest's "oxygen_guage" is "oxygen gauge")."""
    channels = _game_module(game).Env().channels
    ordered = sorted(channels.items(), key=lambda channel: channel[1])
    return tuple(name.replace("_", " ").replace("guage", "gauge") for name, _ in ordered)


class MinAtarEnv(gym.Env[np.ndarray, int]):
    """One MinAtar game as a gymnasium env; see the module docstring. Subclasses name the game."""

    game = ""
    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, sticky_action_prob: float = 0.1, difficulty_ramping: bool = True) -> None:
        if not isinstance(sticky_action_prob, int | float) or not 0 <= sticky_action_prob <= 1:
            raise ValueError(f"sticky_action_prob must lie in [0, 1], got {sticky_action_prob!r}")
        if not isinstance(difficulty_ramping, bool):
            said = f"difficulty_ramping must be true or false, got {difficulty_ramping!r}"
            raise ValueError(said)
        self.sticky_action_prob = float(sticky_action_prob)
        self._game = _game_module(self.game).Env(ramping=difficulty_ramping)
        self.last_action = 0
        self._actions = list(MINATAR_ACTIONS[self.game])
        self.action_space = spaces.Discrete(len(self._actions))
        shape = (10, 10, MINATAR_CHANNELS[self.game])
        self.observation_space = spaces.Box(0, 1, shape=shape, dtype=np.bool_)
        self._draws_from: Any = None

    @property
    def episode_paths(self) -> tuple[str, ...]:
        """What an episode under way changes: the last action (sticky actions repeat it) and
        the game's own attributes (those its ``reset`` sets; its constants and generator left)."""
        names = sorted(set(vars(self._game)) - _CONSTANT)
        return ("last_action", *(f"_game.{name}" for name in names))

    def _share_generator(self) -> None:
        bit_generator = self.np_random.bit_generator
        if self._draws_from is not bit_generator:
            self._game.random = np.random.RandomState(bit_generator)
            self._draws_from = bit_generator

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._share_generator()
        self._game.reset()
        return self._game.state(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        move = self._actions[int(action)]
        if self._game.random.rand() < self.sticky_action_prob:
            move = self.last_action
        self.last_action = move
        reward, terminal = self._game.act(move)
        return self._game.state(), float(reward), bool(terminal), False, {}


class MinAtarAsterixEnv(MinAtarEnv):
    game = "asterix"


class MinAtarBreakoutEnv(MinAtarEnv):
    game = "breakout"


class MinAtarFreewayEnv(MinAtarEnv):
    game = "freeway"


class MinAtarSeaquestEnv(MinAtarEnv):
    game = "seaquest"


class MinAtarSpaceInvadersEnv(MinAtarEnv):
    game = "space_invaders"


MINATAR_ENVS: dict[str, type[MinAtarEnv]] = {
    f"rdqn/MinAtar-{cls.__name__[len('MinAtar') : -len('Env')]}-v0": cls
    for cls in (
        MinAtarAsterixEnv,
        MinAtarBreakoutEnv,
        MinAtarFreewayEnv,
        MinAtarSeaquestEnv,
        MinAtarSpaceInvadersEnv,
    )
}
"""Env id -> its class, one per game (``rdqn/MinAtar-Breakout-v0``, ...)."""
