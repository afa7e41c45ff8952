"""The Blind Cliffwalk figure's trials: the fixed memory, the true Q-values, the counts, the
summary."""

import numpy as np
import pytest

from rdqn.envs import BlindCliffwalkEnv
from rdqn.experiments.cliffwalk import (
    CLIFFWALK_SCHEMES,
    cliffwalk_summary,
    cliffwalk_trials,
    learned,
    replay_until_learned,
    run_cliffwalk_trial,
    trial_config,
)
from rdqn.experiments.cliffwalk_memory import fill_buffer, paper_memory
from rdqn.experiments.tabular import TabularLearner
from rdqn.training.trainer import build_sampler


def test_true_q_values_by_hand_n3() -> None:
    """n = 3, gamma .99: the right action of state s earns 1 after 3 - s steps, so
    Q*(0, right) = .99^2 = .9801, Q*(1, right) = .99, Q*(2, right) = 1; wrong actions 0."""
    env = BlindCliffwalkEnv(n=3, right_actions=(0, 1, 0))
    np.testing.assert_allclose(env.optimal_q_values(0.99), [[0.9801, 0.0], [0.0, 0.99], [1.0, 0.0]])


@pytest.mark.parametrize("scheme", ["uniform", "proportional", "rank"])
def test_replay_never_writes_the_memory(scheme: str) -> None:
    """Every stored array (observations, actions, rewards, flags, generations, cursor) is the
    same after a thousand updates as before; only the sample counts move."""
    config = trial_config(5, scheme, 0)
    env = BlindCliffwalkEnv(**config.env.kwargs)
    memory = paper_memory(env, np.random.default_rng(0))
    buffer = fill_buffer(memory, build_sampler(config), seed=0)
    before = buffer.storage.state_dict()
    learner = TabularLearner(5, 2, config.agent)
    updates, _ = replay_until_learned(
        learner,
        buffer,
        memory,
        env.optimal_q_values(config.agent.gamma),
        threshold=0.0,  # never learned: all 1,000 updates run
        max_updates=1000,
    )
    after = buffer.storage.state_dict()
    assert updates == 1000
    assert after.pop("sample_counts").sum() == 1000
    before.pop("sample_counts")
    assert before.keys() == after.keys()
    for key, value in before.items():
        np.testing.assert_array_equal(after[key], value, err_msg=key)


def test_a_write_during_replay_is_an_error() -> None:
    config = trial_config(3, "uniform", 0)
    env = BlindCliffwalkEnv(**config.env.kwargs)
    memory = paper_memory(env, np.random.default_rng(0))
    buffer = fill_buffer(memory, build_sampler(config), seed=0)

    class Writing(TabularLearner):
        def learn(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            buffer.add(memory.obs[0], 0, 0.0, memory.next_obs[0], True, False)
            return super().learn(*args, **kwargs)

    with pytest.raises(RuntimeError, match="must stay fixed"):
        replay_until_learned(
            Writing(3, 2, config.agent),
            buffer,
            memory,
            env.optimal_q_values(0.99),
            threshold=1e-3,
            max_updates=5,
        )


def test_learned_is_the_mean_squared_error_below_the_threshold() -> None:
    q_star = np.array([[0.0, 1.0], [0.0, 0.5]])
    q = q_star + np.array([[0.1, 0.0], [0.0, 0.0]])  # MSE = 0.01 / 4 = 0.0025
    assert learned(q, q_star, 0.003) and not learned(q, q_star, 0.0025)


def test_trial_config_is_the_paper_learner_at_one_transition_per_update() -> None:
    config = trial_config(6, "rank", 3, {"agent.lr": 0.125})
    assert config.env.kwargs == {"n": 6} and config.seed == 3
    assert config.replay.capacity == 126 and config.replay.batch_size == 1
    assert config.replay.alpha == 0.7 and config.replay.beta0 == 0.0
    agent = config.agent
    assert (agent.network, agent.optimizer, agent.lr) == ("linear", "sgd", 0.125)
    assert trial_config(6, "proportional", 0).replay.alpha == 0.6


def test_trials_are_largest_first_and_checked() -> None:
    trials = cliffwalk_trials([2, 3], ["uniform", "oracle"], [0, 1])
    assert [t.n for t in trials] == [3] * 4 + [2] * 4
    with pytest.raises(ValueError, match="scheme must be one of"):
        cliffwalk_trials([2], ["greedy"], [0])
    with pytest.raises(ValueError, match="n must be an integer from 2 to 24"):
        cliffwalk_trials([1], ["uniform"], [0])
    with pytest.raises(ValueError, match="oracle replays one transition per update"):
        cliffwalk_trials([2], ["oracle"], [0], overrides={"replay.batch_size": 4})
    with pytest.raises(ValueError, match="threshold must be"):
        cliffwalk_trials([2], ["uniform"], [0], threshold=0.0)


def test_trials_are_reproducible_and_prioritization_helps_at_n6() -> None:
    """Same trial, same count; at n = 6 (N = 126) every scheme learns, and over seeds 0-2 the
    median of proportional and of the oracle is below uniform's."""
    results = [run_cliffwalk_trial(t) for t in cliffwalk_trials([6], CLIFFWALK_SCHEMES, [0, 1, 2])]
    again = run_cliffwalk_trial(cliffwalk_trials([6], ["proportional"], [1])[0])
    first = next(r for r in results if (r["scheme"], r["seed"]) == ("proportional", 1))
    assert again["updates_to_threshold"] == first["updates_to_threshold"]
    assert all(r["memory_size"] == 126 and r["rewarded"] == 1 for r in results)
    assert all(r["final_mse"] < 1e-3 for r in results)
    median = {row["scheme"]: row["median"] for row in cliffwalk_summary(results)}
    assert median["proportional"] < median["uniform"]
    assert median["oracle"] < median["uniform"]


def test_max_updates_caps_a_trial() -> None:
    (trial,) = cliffwalk_trials([8], ["uniform"], [0], max_updates=10)
    result = run_cliffwalk_trial(trial)
    assert result["updates"] == 10 and result["updates_to_threshold"] is None


def test_summary_counts_a_trial_that_did_not_learn_as_slowest() -> None:
    """Seeds' counts 100, 300, None: median 300 (None sorts last), min 100, max unknown."""
    results = [
        {"scheme": "uniform", "n": 4, "seed": s, "memory_size": 30, "updates_to_threshold": c}
        for s, c in ((0, 300), (1, None), (2, 100))
    ]
    (row,) = cliffwalk_summary(results)
    assert (row["median"], row["min"], row["max"], row["learned"]) == (300, 100, None, 2)
    assert row["seeds"] == [0, 1, 2] and row["updates_to_threshold"] == [300, None, 100]
    results[0]["updates_to_threshold"] = None
    (row,) = cliffwalk_summary(results)
    assert row["median"] is None
