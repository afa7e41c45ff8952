"""Synthetic market: reward by hand, replayed series, CSV errors and the price process."""

import io
import math
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.envs import SyntheticMarketEnv, load_prices_csv, make_env

pytestmark = pytest.mark.filterwarnings("error")

FLAT, LONG, SHORT = 0, 1, 2


def test_check_env_passes() -> None:
    check_env(make_env("rdqn/SyntheticMarket-v0", episode_length=20).unwrapped)
    replay = SyntheticMarketEnv(prices=np.linspace(100.0, 110.0, 40), episode_length=10)
    check_env(replay, skip_render_check=True)


def test_spaces() -> None:
    env = SyntheticMarketEnv()
    assert env.observation_space.shape == (9,) and env.observation_space.dtype == np.float32
    assert env.observation_space.low[-1] == -1.0 and env.observation_space.high[-1] == 1.0
    assert env.action_space.n == 3


def test_reward_by_hand_on_four_prices() -> None:
    """prices 100, 101, 99, 102; n_returns=1, episode_length=2, cost 0.001 (the series just fits).

    t=1 (p=101): go long  -> 1 * (99 - 101) - 0.001 * 101 * |1 - 0|   = -2.101
    t=2 (p=99):  go short -> -1 * (102 - 99) - 0.001 * 99 * |-1 - 1|  = -3.198, truncated
    """
    env = SyntheticMarketEnv(
        prices=np.array([100.0, 101.0, 99.0, 102.0]), n_returns=1, episode_length=2, cost=0.001
    )
    obs, info = env.reset(seed=0)
    np.testing.assert_allclose(obs, [math.log(101 / 100), 0.0], rtol=1e-6)
    assert info == {"price": 101.0, "position": 0, "regime": -1}

    obs, reward, terminated, truncated, info = env.step(LONG)
    assert reward == pytest.approx(-2.101, abs=1e-12)
    assert (terminated, truncated) == (False, False)
    np.testing.assert_allclose(obs, [math.log(99 / 101), 1.0], rtol=1e-6)
    assert info["price"] == 99.0 and info["position"] == 1

    obs, reward, terminated, truncated, _ = env.step(SHORT)
    assert reward == pytest.approx(-3.198, abs=1e-12)
    assert (terminated, truncated) == (False, True)
    np.testing.assert_allclose(obs, [math.log(102 / 99), -1.0], rtol=1e-6)

    with pytest.raises(RuntimeError, match="reset"):
        env.step(FLAT)


def test_holding_a_position_pays_cost_once() -> None:
    env = SyntheticMarketEnv(
        prices=np.array([100.0, 100.0, 102.0, 105.0, 104.0]),
        n_returns=1,
        episode_length=3,
        cost=0.01,
    )
    env.reset(seed=0)
    rewards = [env.step(LONG)[1] for _ in range(3)]
    assert rewards == pytest.approx([2.0 - 1.0, 3.0, -1.0])


def test_observation_is_returns_oldest_first_then_position() -> None:
    log_prices = np.cumsum([0.0, 0.1, 0.2, 0.3, 0.4])
    env = SyntheticMarketEnv(prices=np.exp(log_prices), n_returns=3, episode_length=1)
    obs, _ = env.reset(seed=0)
    np.testing.assert_allclose(obs, [0.1, 0.2, 0.3, 0.0], rtol=1e-6)
    obs, *_ = env.step(SHORT)
    np.testing.assert_allclose(obs, [0.2, 0.3, 0.4, -1.0], rtol=1e-6)


def test_simulated_episode_truncates_at_episode_length() -> None:
    env = make_env("rdqn/SyntheticMarket-v0", episode_length=50)
    env.reset(seed=1)
    actions = np.random.default_rng(1).integers(0, 3, size=50)
    flags = [env.step(int(a))[2:4] for a in actions]
    assert flags == [(False, False)] * 49 + [(False, True)]


def test_default_episode_is_500_steps() -> None:
    env = SyntheticMarketEnv()
    env.reset(seed=0)
    assert env.episode_prices.size == 8 + 500 + 1
    steps = 0
    truncated = False
    while not truncated:
        _, _, terminated, truncated, _ = env.step(FLAT)
        assert not terminated
        steps += 1
    assert steps == 500


def test_same_seed_same_trajectory_and_different_seed_differs() -> None:
    actions = np.random.default_rng(0).integers(0, 3, size=40)

    def rollout(seed: int) -> list[tuple[object, ...]]:
        env = make_env("rdqn/SyntheticMarket-v0", episode_length=40)
        obs, _ = env.reset(seed=seed)
        steps: list[tuple[object, ...]] = [tuple(obs)]
        for action in actions:
            obs, reward, _, _, info = env.step(int(action))
            steps.append((tuple(obs), reward, info["regime"]))
        return steps

    assert rollout(9) == rollout(9)
    assert rollout(9) != rollout(10)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**31),
    actions=st.lists(st.integers(min_value=0, max_value=2), min_size=12, max_size=12),
    cost=st.floats(min_value=0.0, max_value=0.01),
)
def test_reward_matches_the_formula_on_simulated_prices(
    seed: int, actions: list[int], cost: float
) -> None:
    """reward_t = position * (p_{t+1} - p_t) - cost * p_t * |position - previous position|."""
    env = SyntheticMarketEnv(episode_length=12, n_returns=4, cost=cost)
    env.reset(seed=seed)
    prices = env.episode_prices
    previous = 0
    for step, action in enumerate(actions):
        position = (0, 1, -1)[action]
        t = 4 + step
        pnl = position * (prices[t + 1] - prices[t])
        expected = pnl - cost * prices[t] * abs(position - previous)
        _, reward, *_ = env.step(action)
        assert reward == pytest.approx(expected, rel=1e-12, abs=1e-12)
        previous = position


def test_zero_volatility_keeps_the_price_at_its_mean() -> None:
    env = SyntheticMarketEnv(calm_volatility=0.0, stormy_volatility=0.0, episode_length=5)
    env.reset(seed=0)
    np.testing.assert_allclose(env.episode_prices, 100.0, rtol=1e-12)


def test_regime_volatility_within_tolerance() -> None:
    """No switching, weak reversion: the return std is the regime's sigma within 5% (seeded)."""
    for regime_seed in range(4):
        env = SyntheticMarketEnv(
            episode_length=20_000, switch_probability=0.0, mean_reversion=0.001
        )
        _, info = env.reset(seed=regime_seed)
        sigma = env.volatilities[info["regime"]]
        returns = np.diff(np.log(env.episode_prices))
        assert returns.std() == pytest.approx(sigma, rel=0.05)


def test_replay_offset_is_seeded_and_in_range() -> None:
    series = 100.0 + np.arange(200.0)
    env = SyntheticMarketEnv(prices=series, n_returns=4, episode_length=20)
    offsets = []
    for seed in range(20):
        env.reset(seed=seed)
        window = env.episode_prices
        assert window.size == 25
        offset = int(window[0] - 100.0)
        np.testing.assert_array_equal(window, series[offset : offset + 25])
        offsets.append(offset)
        env.reset(seed=seed)
        assert env.episode_prices[0] == window[0]
    assert len(set(offsets)) > 5 and min(offsets) >= 0 and max(offsets) <= 175


def test_replay_starts_at_zero_when_the_series_just_fits() -> None:
    series = np.linspace(50.0, 60.0, 4 + 20 + 1)
    env = SyntheticMarketEnv(prices=series, n_returns=4, episode_length=20)
    for seed in range(5):
        env.reset(seed=seed)
        np.testing.assert_array_equal(env.episode_prices, series)


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        (
            np.ones(10),
            r"prices has 10 values; an episode needs n_returns \+ episode_length \+ 1 = 11",
        ),
        (np.ones((4, 4)), r"prices must be one-dimensional, got shape \(4, 4\)"),
        (np.r_[np.ones(5), -1.0, np.ones(5)], r"prices\[5\] = -1.0"),
        (np.r_[np.ones(7), np.nan, np.ones(5)], r"prices\[7\] = nan"),
    ],
)
def test_bad_supplied_prices_are_rejected(prices: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SyntheticMarketEnv(prices=prices, n_returns=2, episode_length=8)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"episode_length": 0}, "episode_length must be an integer >= 1, got 0"),
        ({"n_returns": 0}, "n_returns must be an integer >= 1, got 0"),
        ({"cost": -1.0}, "cost must be a finite number >= 0, got -1.0"),
        ({"mean_reversion": 0.0}, r"mean_reversion must be in \(0, 1\], got 0.0"),
        ({"stormy_volatility": -0.1}, "stormy_volatility must be a finite number >= 0, got -0.1"),
        ({"switch_probability": 2.0}, r"switch_probability must be in \[0, 1\], got 2.0"),
        ({"initial_price": 0.0}, "initial_price must be a finite number > 0, got 0.0"),
    ],
)
def test_bad_arguments_are_rejected(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SyntheticMarketEnv(**kwargs)  # type: ignore[arg-type]


def test_load_prices_csv_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text("time,price\n0,100.5\n1, 101\n2,99.25\n")
    np.testing.assert_array_equal(load_prices_csv(path), [100.5, 101.0, 99.25])


def test_load_prices_csv_other_column_and_into_the_env() -> None:
    csv = "close,volume\n" + "".join(f"{100 + k},{k}\n" for k in range(12))
    prices = load_prices_csv(io.StringIO(csv), column="close")
    env = SyntheticMarketEnv(prices=prices, n_returns=3, episode_length=8)
    _, info = env.reset(seed=0)
    assert info["price"] == 103.0


@pytest.mark.parametrize(
    ("csv", "message"),
    [
        (
            "time,close\n0,1\n1,2\n",
            r"no column 'price' in its header row; columns: \['time', 'close'\]",
        ),
        ("price\n100\n101\nabc\n102\n", r"column 'price', row 3: 'abc' is not a number"),
        ("price\n100\n\n", r"column 'price' has 1 row\(s\); need at least 2"),
        ("t,price\n0,100\n1,\n2,101\n", r"column 'price', row 2: '' is not a number"),
        ("price\n100\n-5\n", r"column 'price', row 2: '-5' is not > 0"),
        ("price\n100\n101\n0\n", r"column 'price', row 3: '0' is not > 0"),
        ("price\n100\ninf\n", r"column 'price', row 2: 'inf' is not finite"),
        ("price\nnan\n100\n", r"column 'price', row 1: 'nan' is not finite"),
        ("price\n100\n", r"column 'price' has 1 row\(s\); need at least 2"),
        ("price\n", r"column 'price' has 0 row\(s\); need at least 2"),
        ("", r"price CSV is empty"),
        ("price\n1\n2,3,4\n", r"line 3 has 3 field\(s\), the header has 1"),
    ],
)
def test_bad_csv_names_row_and_column(csv: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_prices_csv(io.StringIO(csv))
