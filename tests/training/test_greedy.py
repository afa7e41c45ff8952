"""rdqn.training.greedy: a greedy episode recorded as its poses, actions and rewards (and
rdqn.training.episodes: kept as bytes)."""

from __future__ import annotations

import io

import numpy as np
import pytest

from rdqn.envs import make_env
from rdqn.training import greedy
from rdqn.training.episodes import PlayedEpisode
from rdqn.training.greedy import play_greedy
from rdqn.training.watcher import watch_seed


def always(action: int, actions: int = 2):
    q = np.zeros(actions, dtype=np.float32)
    q[action] = 1.0
    return lambda window, mask: q


def test_cartpole_episode_holds_every_observations_pose() -> None:
    """Always pushing right: the same episode as stepping the env by hand with the same seed."""
    episode = play_greedy(always(1), "CartPole-v1", {}, 1, seed=5, env_steps=123)
    env = make_env("CartPole-v1")
    obs, _ = env.reset(seed=5)
    expected, done = [obs], False
    while not done:
        obs, _, terminated, truncated, _ = env.step(1)
        expected.append(obs)
        done = terminated or truncated
    expected = np.asarray(expected, dtype=np.float32)
    np.testing.assert_array_equal(episode.poses, expected[:, [0, 2]])
    assert episode.length == len(expected) - 1 == episode.rewards.size
    assert episode.actions.tolist() == [1] * episode.length
    assert episode.episode_return == pytest.approx(episode.length)
    assert episode.terminated and episode.env_steps == 123 and episode.seed == 5
    assert episode.prices is None and episode.row_size is None
    assert episode.poses.nbytes + episode.actions.nbytes + episode.rewards.nbytes < 8_000


def test_window_reaches_the_policy() -> None:
    """A recurrent policy sees windows of T observations of the episode, the last one newest,
    with the mask of its real frames."""
    seen, masks = [], []

    def q(window: np.ndarray, mask: np.ndarray) -> np.ndarray:
        seen.append(window.copy())
        masks.append(mask.copy())
        return np.float32([0.0, 1.0])

    episode = play_greedy(q, "rdqn/MaskedCartPole-v0", {}, 4, seed=0)
    assert seen[0].shape == (4, 2) and not seen[0][:3].any()  # zero padding before o_0
    assert masks[0].tolist() == [False, False, False, True]
    assert masks[2].tolist() == [False, True, True, True]
    np.testing.assert_array_equal(seen[2][-1], episode.poses[2])
    np.testing.assert_array_equal(seen[2][-3:-1], episode.poses[:2])


def test_cliffwalk_and_market_keep_what_their_pictures_need() -> None:
    cliff = play_greedy(always(0), "rdqn/BlindCliffwalk-v0", {"n": 5}, 1, seed=0)
    assert cliff.row_size == 5 and cliff.poses[0, 0] == 0.0
    market = play_greedy(always(1, 3), "rdqn/SyntheticMarket-v0", {}, 1, seed=0)
    assert market.prices is not None and market.prices.size == market.length + 1
    assert (market.poses[1:, 0] == 1.0).all() and market.poses[0, 0] == 0.0
    assert not market.terminated


def test_watch_seeds_differ_by_run_and_episode() -> None:
    seeds = {watch_seed(run, k) for run in range(10) for k in range(100)}
    assert len(seeds) == 1000 and min(seeds) > 100_000


@pytest.mark.parametrize(
    ("env_id", "action", "actions", "kwargs"),
    [
        ("CartPole-v1", 1, 2, {}),
        ("rdqn/BlindCliffwalk-v0", 0, 2, {"n": 5}),
        ("rdqn/SyntheticMarket-v0", 1, 3, {}),
    ],
)
def test_an_episode_comes_back_from_its_bytes_as_it_was(env_id, action, actions, kwargs) -> None:  # noqa: ANN001
    """What the store keeps of the latest watched episode: every field, exact, no pickle."""
    episode = play_greedy(always(action, actions), env_id, kwargs, 1, seed=3, env_steps=77)
    data = episode.to_bytes()
    back = PlayedEpisode.from_bytes(data)
    assert (back.env_id, back.env_steps, back.seed, back.terminated, back.row_size) == (
        episode.env_id,
        77,
        3,
        episode.terminated,
        episode.row_size,
    )
    for name in ("poses", "actions", "rewards"):
        np.testing.assert_array_equal(getattr(back, name), getattr(episode, name))
        assert getattr(back, name).dtype == getattr(episode, name).dtype
    if episode.prices is None:
        assert back.prices is None
    else:
        np.testing.assert_array_equal(back.prices, episode.prices)
    assert b"pickle" not in data and len(data) < 20_000


def test_bytes_that_are_no_episode_are_refused() -> None:
    with pytest.raises(ValueError, match="not a stored episode"):
        PlayedEpisode.from_bytes(b"not an archive")
    episode = play_greedy(always(1), "CartPole-v1", {}, 1, seed=0)
    buffer = io.BytesIO()
    np.savez(buffer, poses=episode.poses)  # an archive without the episode's fields
    with pytest.raises(ValueError, match="not a stored episode"):
        PlayedEpisode.from_bytes(buffer.getvalue())


def test_an_episode_that_would_not_end_stops_at_the_step_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A greedy policy that never loses (MinAtar's games have no time limit) still returns: at
    `GREEDY_STEP_LIMIT` steps, not ended by the game. CartPole lasts more than 5 steps."""
    monkeypatch.setattr(greedy, "GREEDY_STEP_LIMIT", 5)
    episode = play_greedy(always(1), "CartPole-v1", {}, 1, seed=5)
    assert episode.length == 5 and not episode.terminated
