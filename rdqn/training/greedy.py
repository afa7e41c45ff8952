"""Greedy episodes of a run's current policy, played on an env of their own ("Watch it play").

An episode is played with a = argmax_a Q(W_t, a) on a fresh env reset with its own seed, the
windows W_t built by the same `WindowBuilder` as training's. Nothing of the training is touched:
not its env, its generators (acting greedily draws nothing), its replay memory, its counters or
its telemetry, so a run trains step for step the same whether or not anyone watches it.

What an episode keeps (`rdqn.training.episodes.PlayedEpisode`) is what a picture needs
(`rdqn.envs.poses`), a few kB: the pose of every observation o_0 … o_T, the actions and rewards,
and for the market the price at each step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rdqn.envs import make_env
from rdqn.envs.poses import pose_kind, poses
from rdqn.replay.windows import WindowBuilder
from rdqn.training.episodes import PlayedEpisode

__all__ = ["GREEDY_STEP_LIMIT", "carrying_q_values", "play_greedy"]

GREEDY_STEP_LIMIT = 100_000
"""The most steps a greedy episode plays: MinAtar's games have no time limit (nor has Revisiting
Rainbow's runner, at 10^8 steps), and a greedy policy that never loses would play for ever."""


def carrying_q_values(
    q_values_carrying: Callable[
        [NDArray[np.float32], NDArray[np.float32]], tuple[NDArray[np.float32], NDArray[np.float32]]
    ],
    state_size: int,
) -> Callable[[NDArray[np.float32], NDArray[np.bool_]], NDArray[np.float32]]:
    """For `play_greedy` with windows of one observation: the Q-values of each o_t read from the
    recurrent state carried from the episode's first step (zeros then), as sequence replay's
    agent acts (`DQNAgent.q_values_carrying`). One per episode: the state starts at zeros."""
    state = np.zeros(state_size, np.float32)

    def q_values(window: NDArray[np.float32], mask: NDArray[np.bool_]) -> NDArray[np.float32]:
        nonlocal state
        q, state = q_values_carrying(window[-1], state)
        return q

    return q_values


def play_greedy(
    q_values: Callable[[NDArray[np.float32], NDArray[np.bool_]], NDArray[np.float32]],
    env_id: str,
    env_kwargs: dict[str, Any],
    window: int,
    *,
    seed: int,
    env_steps: int = 0,
) -> PlayedEpisode:
    """Play one episode with a = argmax_a q_values(W_t, its mask of real frames) (first maximum
    on ties) on a new env reset with ``seed``; the env's own time limit ends it (CartPole: 500
    steps), or at the latest `GREEDY_STEP_LIMIT` steps."""
    env = make_env(env_id, **env_kwargs)
    try:
        obs, info = env.reset(seed=seed)
        builder = WindowBuilder(window, tuple(np.shape(obs)))
        builder.reset(obs)
        observations, actions, rewards, prices = [obs], [], [], [info.get("price")]
        terminated = truncated = False
        while not (terminated or truncated) and len(actions) < GREEDY_STEP_LIMIT:
            action = int(np.argmax(q_values(*builder.window_and_mask())))
            obs, reward, terminated, truncated, info = env.step(action)
            builder.append(obs)
            observations.append(obs)
            actions.append(action)
            rewards.append(float(reward))
            prices.append(info.get("price"))
    finally:
        env.close()
    return PlayedEpisode(
        env_id=env_id,
        env_steps=int(env_steps),
        seed=int(seed),
        poses=poses(env_id, np.asarray(observations, dtype=np.float32)),
        actions=np.asarray(actions, dtype=np.int8),
        rewards=np.asarray(rewards, dtype=np.float32),
        terminated=bool(terminated),
        prices=None if prices[0] is None else np.asarray(prices, dtype=np.float32),
        row_size=int(np.size(observations[0])) if pose_kind(env_id) == "row" else None,
    )
