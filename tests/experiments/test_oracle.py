"""The PER paper's oracle on a tiny Blind Cliffwalk, computed by hand.

n = 2, right actions (1, 1), gamma .99, the `paper` learner (one transition moves Q by delta/2),
Q = 0. Distinct transitions, in order k: 0 = (0, wrong), 1 = (0, right), 2 = (1, wrong),
3 = (1, right, r = 1); stored 2, 2, 1, 1 times (N = 6). Q*(0, right) = .99, Q*(1, right) = 1.

Update 1. Only k = 3 has a TD error (1); replaying it sets Q(1, right) = .5. Every other
candidate leaves Q as it is. q-error after: (.99)^2 + (.5)^2 = 1.2301; td after:
(.99 * .5)^2 + .5^2 = .495025.

Update 2 (Q(1, right) = .5). k = 1 (delta .495): Q(0, right) = .2475; q-error
(.99 - .2475)^2 + .25 = .80130625; td .2475^2 + .5^2 = .31125625. k = 3 (delta .5): Q(1, right)
= .75; q-error .9801 + .0625 = 1.0426; td (.99 * .75)^2 + .25^2 = .61380625. Both pick k = 1.
"""

import numpy as np
import pytest

from rdqn.envs import BlindCliffwalkEnv
from rdqn.experiments.cliffwalk_memory import paper_memory
from rdqn.experiments.oracle import ORACLE_LOSSES, global_loss, oracle_choice, oracle_update
from rdqn.experiments.tabular import TabularLearner
from rdqn.presets import preset

PAPER = preset("paper").agent


@pytest.fixture
def tiny():
    env = BlindCliffwalkEnv(n=2, right_actions=(1, 1))
    memory = paper_memory(env, np.random.default_rng(0))
    return memory, env.optimal_q_values(0.99), TabularLearner(2, 2, PAPER)


@pytest.mark.parametrize(
    ("kind", "first", "second"),
    [("q-error", 1.2301, 0.80130625), ("td", 0.495025, 0.31125625)],
)
def test_two_updates_by_hand(tiny, kind: str, first: float, second: float) -> None:
    memory, q_star, learner = tiny
    k, loss = oracle_choice(learner, memory, q_star, kind)
    assert (k, loss) == (3, pytest.approx(first))
    row = oracle_update(learner, memory, q_star, kind)
    assert (memory.states[row], memory.actions[row], memory.rewards[row]) == (1, 1, 1.0)
    np.testing.assert_allclose(learner.q, [[0, 0], [0, 0.5]])
    k, loss = oracle_choice(learner, memory, q_star, kind)
    assert (k, loss) == (1, pytest.approx(second))


def test_td_memory_weighs_each_stored_copy(tiny) -> None:
    """After update 1: the (0, right) copies (2 of 6) carry .495^2 each, the goal .5^2."""
    memory, q_star, learner = tiny
    oracle_update(learner, memory, q_star, "td-memory")
    expected = (2 * 0.495**2 + 0.5**2) / 6
    assert global_loss(learner, memory, q_star, "td-memory") == pytest.approx(expected)


@pytest.mark.parametrize("kind", ORACLE_LOSSES)
def test_distinct_transitions_choose_as_every_slot_would(kind: str) -> None:
    """Trying each of the N slots (copies included) finds the same smallest loss as trying the
    2n distinct transitions, update after update (n = 4, random layout)."""
    env = BlindCliffwalkEnv(n=4, layout_seed=3)
    memory = paper_memory(env, np.random.default_rng(2))
    q_star = env.optimal_q_values(0.99)
    learner = TabularLearner(4, 2, PAPER)
    columns = (memory.states, memory.actions, memory.rewards, memory.next_states)
    for _ in range(12):
        best = np.inf
        for slot in range(len(memory)):
            trial = learner.copy()
            trial.learn(*(c[slot : slot + 1] for c in (*columns, memory.terminated)))
            best = min(best, global_loss(trial, memory, q_star, kind))
        _, loss = oracle_choice(learner, memory, q_star, kind)
        assert loss == pytest.approx(best)
        oracle_update(learner, memory, q_star, kind)


def test_q_error_oracle_learns_n8_in_fewer_updates_than_the_memory_holds() -> None:
    """n = 8 (N = 510): the oracle learns Q within MSE 1e-3 of Q* in fewer updates than N, and
    in the same number whatever the memory's order (it only sees distinct transitions)."""
    env = BlindCliffwalkEnv(n=8)
    q_star = env.optimal_q_values(0.99)
    counts = []
    for order in (0, 1):
        memory = paper_memory(env, np.random.default_rng(order))
        learner = TabularLearner(8, 2, PAPER)
        updates = 0
        while np.mean((learner.q - q_star) ** 2) >= 1e-3:
            oracle_update(learner, memory, q_star)
            updates += 1
        counts.append(updates)
    assert counts[0] == counts[1] < len(memory)


def test_unknown_loss_is_refused(tiny) -> None:
    memory, q_star, learner = tiny
    with pytest.raises(ValueError, match="oracle loss must be one of"):
        oracle_choice(learner, memory, q_star, "huber")
