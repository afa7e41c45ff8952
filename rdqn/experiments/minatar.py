"""Where prioritization matters: DQN with uniform against prioritized replay on MinAtar games.

One trial is one (game, scheme, seed) of the `minatar` preset (MinAtar's conv net, Revisiting
Rainbow's DQN settings; `rdqn.presets` says where they differ), trained and scored by its greedy
evaluations as `rdqn.experiments.greedy` records them; the summary gives both scores per game and
scheme, the table their IQMs and the probability that a prioritized run beats a uniform one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rdqn.config import SCHEMES
from rdqn.envs.minatar import MINATAR_ENVS
from rdqn.experiments.greedy import greedy_summary
from rdqn.presets import configure
from rdqn.validation import check_choice, check_integer

__all__ = [
    "MINATAR_DEFAULT_GAMES",
    "MINATAR_DEFAULT_SCHEMES",
    "MinAtarTrial",
    "minatar_summary",
    "minatar_trials",
]

PRESET = "minatar"
MINATAR_DEFAULT_GAMES: tuple[str, ...] = (
    "rdqn/MinAtar-Breakout-v0",
    "rdqn/MinAtar-SpaceInvaders-v0",
)
MINATAR_DEFAULT_SCHEMES: tuple[str, ...] = ("uniform", "proportional")


@dataclass(frozen=True, kw_only=True)
class MinAtarTrial:
    """One (game, scheme, seed) of the study, with its whole config."""

    game: str
    scheme: str
    seed: int
    config: dict[str, Any] = field(repr=False)


def minatar_trials(
    games: Sequence[str],
    schemes: Sequence[str],
    seeds: Sequence[int],
    *,
    steps: int | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> list[MinAtarTrial]:
    """Every (game, scheme, seed), seed-major then game; ``steps`` replaces the preset's
    budget, keeping its exploration span (100,000 env steps, or the budget when shorter) and
    evaluating 20 times. A bad value is one `ValueError` naming it."""
    if not games or not schemes or not seeds:
        raise ValueError("games, schemes and seeds must each hold at least one value")
    for game in games:
        check_choice("game", game, tuple(MINATAR_ENVS))
    for scheme in schemes:
        check_choice("scheme", scheme, SCHEMES)
    trials = []
    for seed in seeds:
        for game in games:
            for scheme in schemes:
                settings: dict[str, Any] = {"env.id": game, "replay.scheme": scheme, "seed": seed}
                if steps is not None:
                    budget = check_integer("steps", steps, minimum=100)
                    settings |= {
                        "train.total_steps": budget,
                        "train.epsilon_fraction": min(1.0, 100_000 / budget),
                        "train.eval_every": max(1, budget // 20),
                    }
                config = configure(PRESET, {**settings, **(overrides or {})})
                trials.append(
                    MinAtarTrial(game=game, scheme=scheme, seed=seed, config=config.to_dict())
                )
    return trials


def minatar_summary(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (game, scheme), games in their order of appearance, schemes in `SCHEMES`
    order (`greedy_summary`)."""
    return greedy_summary(results, group="game", arm="scheme", arms=SCHEMES)
