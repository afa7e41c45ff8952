""" "Watch it play": a greedy episode of the run's policy, drawn and animated in the browser.

The run's worker plays the episode (`rdqn.training.greedy`) and sends its poses, actions and
rewards, a few kB; `player_html` puts them into the player (``assets/watch/player.html``), which
draws every frame from the poses itself, so an episode costs the server one message, not one per
frame. The player's document depends on the episode and the projector mode only: while the same
episode is on screen, a page rerun sends the same document and the browser keeps its iframe (and
the animation) as it is.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from rdqn.dashboard.assets import APP_ROOT
from rdqn.envs.minatar import MINATAR_ACTIONS, MINATAR_ENVS, MINATAR_MOVES, channel_names
from rdqn.envs.poses import pose_kind
from rdqn.training.episodes import PlayedEpisode

__all__ = [
    "ACTION_LABELS",
    "PLAYER_HEIGHT",
    "episode_payload",
    "player_height",
    "player_html",
    "watch_seconds",
]

ACTION_LABELS: dict[str, tuple[str, ...]] = {
    "CartPole-v1": ("← push left", "push right →"),
    "rdqn/MaskedCartPole-v0": ("← push left", "push right →"),
    "rdqn/BlindCliffwalk-v0": ("action 0", "action 1"),
    "rdqn/SparseChain-v0": ("← left", "right →"),
    "rdqn/SyntheticMarket-v0": ("go flat", "go long", "go short"),
    **{
        env_id: tuple(MINATAR_MOVES[move] for move in MINATAR_ACTIONS[cls.game])
        for env_id, cls in MINATAR_ENVS.items()
    },
}
"""What each env's actions are called on screen."""
PACE: dict[str, float] = {"cartpole": 50.0, "row": 3.0, "market": 20.0, "frame": 10.0}
"""Frames a second the player shows at 1x, by kind: CartPole in real time (its step is 0.02 s)."""
FRAME_COLORS: tuple[str, ...] = (
    "#f0f2f6", "#1f3b73", "#ef553b", "#d4a017", "#2ca02c", "#9467bd",
    "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
)  # fmt: skip
"""A MinAtar frame's cell colours: empty, then one per channel (`rdqn.envs.poses`' codes)."""
HOLD_S = 1.5
"""Seconds the player holds an episode's last frame before it plays it again."""
PLAYER_HEIGHT = 270
"""The player's height in pixels (caption, drawing, controls); `player_height` in projector mode."""


@cache
def _template() -> str:
    return (APP_ROOT / "assets" / "watch" / "player.html").read_text(encoding="utf-8")


def episode_payload(episode: PlayedEpisode, *, projector: bool = False) -> dict[str, Any]:
    """What the player reads: the episode's arrays as lists, and how to label it."""
    kind = pose_kind(episode.env_id)
    return {
        "env_id": episode.env_id,
        "kind": kind,
        "poses": episode.poses.tolist(),
        "actions": episode.actions.tolist(),
        "rewards": episode.rewards.tolist(),
        "prices": None if episode.prices is None else episode.prices.tolist(),
        "row_size": episode.row_size,
        "terminated": episode.terminated,
        "env_steps": episode.env_steps,
        "return": episode.episode_return,
        "length": episode.length,
        "action_labels": list(ACTION_LABELS[episode.env_id]),
        "projector": projector,
        "pace": PACE[kind],
        "colors": list(FRAME_COLORS),
        "legend": list(_legend(episode.env_id)) if kind == "frame" else [],
        "hold_ms": HOLD_S * 1000,
    }


def _legend(env_id: str) -> tuple[str, ...]:
    return channel_names(MINATAR_ENVS[env_id].game)


def player_html(episode: PlayedEpisode, *, projector: bool = False) -> str:
    """The player's document with ``episode`` in it (JSON, with ``</`` escaped so no value can
    end the script element)."""
    data = json.dumps(episode_payload(episode, projector=projector), separators=(",", ":"))
    return _template().replace("__EPISODE__", data.replace("</", "<\\/"))


def watch_seconds(episode: PlayedEpisode) -> float:
    """How long the player takes to show ``episode`` once at 1x, its last frame held."""
    return episode.length / PACE[pose_kind(episode.env_id)] + HOLD_S


def player_height(projector: bool) -> int:
    return int(PLAYER_HEIGHT * (1.3 if projector else 1.0))
