"""Recurrent replay on masked CartPole: E14's windows against R2D2's sequences.

The recurrent Q-network of `e14-lesson` (two LSTMs, proportional PER α .6, β .4 -> 1, 20,000 env
steps, an update every 2) learns on masked CartPole (positions only: the velocities must be
remembered) from one of four replays, the arms (`RECURRENT_ARMS`):

- ``windows``: the preset's, E14's windows of T = 4 observations, each read from a zero state,
  32 per batch, the last step of each learned;
- ``stored-state``: R2D2's sequences (Kapturowski et al. 2019) of m = 16 steps overlapping by 8,
  8 per batch, read from the LSTM state recorded while acting, the first 8 steps a burn-in that
  only brings that state up to date (none where a sequence begins its episode), one priority per
  sequence (η .9);
- ``zero-state``: the same sequences read from a zero state, burn-in kept;
- ``zero-state-no-burn-in``: from a zero state, every step learned.

A batch of 8 sequences of 16 steps runs the LSTMs over as many steps (128) as 32 windows of 4:
the arms cost about the same per update. A trial is one (arm, seed), scored by its greedy
evaluations as `rdqn.experiments.greedy` records them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rdqn.experiments.greedy import greedy_summary
from rdqn.presets import configure
from rdqn.validation import check_choice, check_integer

__all__ = [
    "RECURRENT_ARMS",
    "RecurrentTrial",
    "recurrent_summary",
    "recurrent_trials",
]

PRESET = "e14-lesson"
ENV = "rdqn/MaskedCartPole-v0"
_SEQUENCES: dict[str, Any] = {
    "replay.mode": "sequences",
    "replay.sequence_length": 16,
    "replay.sequence_overlap": 8,
    "replay.burn_in": 8,
    "replay.batch_size": 8,
}
RECURRENT_ARMS: dict[str, dict[str, Any]] = {
    "windows": {},
    "stored-state": _SEQUENCES,
    "zero-state": {**_SEQUENCES, "replay.stored_state": False},
    "zero-state-no-burn-in": {**_SEQUENCES, "replay.stored_state": False, "replay.burn_in": 0},
}
"""Each arm's overrides of `e14-lesson` (the module docstring says what they are)."""
EVALUATIONS = 10
"""Greedy evaluations per trial, evenly spaced over its budget."""
EVAL_EPISODES = 5
"""Episodes per evaluation, one per held-out env seed."""


@dataclass(frozen=True, kw_only=True)
class RecurrentTrial:
    """One (arm, seed) of the study, with its whole config."""

    env: str
    arm: str
    seed: int
    config: dict[str, Any] = field(repr=False)


def recurrent_trials(
    arms: Sequence[str],
    seeds: Sequence[int],
    *,
    steps: int | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> list[RecurrentTrial]:
    """Every (arm, seed), seed-major; ``steps`` replaces the preset's budget (exploration over
    the same fraction of it). A bad value is one `ValueError` naming it."""
    if not arms or not seeds:
        raise ValueError("arms and seeds must each hold at least one value")
    for arm in arms:
        check_choice("arm", arm, tuple(RECURRENT_ARMS))
    budget = configure(PRESET).train.total_steps
    if steps is not None:
        budget = check_integer("steps", steps, minimum=100)
    trials = []
    for seed in seeds:
        for arm in arms:
            settings = {
                **RECURRENT_ARMS[arm],
                "seed": seed,
                "train.total_steps": budget,
                "train.eval_every": max(1, budget // EVALUATIONS),
                "train.eval_episodes": EVAL_EPISODES,
            }
            config = configure(PRESET, {**settings, **(overrides or {})})
            trials.append(RecurrentTrial(env=ENV, arm=arm, seed=seed, config=config.to_dict()))
    return trials


def recurrent_summary(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per arm, in `RECURRENT_ARMS` order (`greedy_summary`)."""
    return greedy_summary(results, group="env", arm="arm", arms=tuple(RECURRENT_ARMS))
