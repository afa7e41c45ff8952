"""The Blind Cliffwalk memory of the PER paper's figure 1: every action sequence run to its end."""

import itertools
from collections import Counter

import numpy as np
import pytest

from rdqn.envs import BlindCliffwalkEnv
from rdqn.experiments.cliffwalk_memory import fill_buffer, memory_size, paper_memory
from rdqn.replay import ProportionalSampler, UniformSampler


def rows(memory) -> Counter:
    """The memory as a multiset of (s, a, r, s', terminated)."""
    return Counter(
        zip(
            memory.states.tolist(),
            memory.actions.tolist(),
            memory.rewards.tolist(),
            memory.next_states.tolist(),
            memory.terminated.tolist(),
            strict=True,
        )
    )


def test_n2_by_hand() -> None:
    """Right actions (1, 0). Sequences: 00 01 (wrong at s0), 10 (right, right: goal), 11 (right,
    wrong): (0, right) x2, (0, wrong) x2, (1, right, r=1) x1, (1, wrong) x1, N = 6."""
    env = BlindCliffwalkEnv(n=2, right_actions=(1, 0))
    memory = paper_memory(env, np.random.default_rng(0))
    assert len(memory) == 6 == memory_size(2)
    assert rows(memory) == Counter(
        {
            (0, 1, 0.0, 1, False): 2,
            (0, 0, 0.0, 0, True): 2,
            (1, 0, 1.0, 0, True): 1,
            (1, 1, 0.0, 0, True): 1,
        }
    )
    assert memory.counts.tolist() == [2, 2, 1, 1]
    pairs = [(memory.states[k], memory.actions[k]) for k in memory.distinct]
    assert pairs == [(0, 0), (0, 1), (1, 0), (1, 1)]


def env_transitions(env: BlindCliffwalkEnv, actions: tuple[int, ...]) -> list[tuple]:
    """One action sequence executed in the env until the episode ends."""
    env.reset()
    out = []
    state = 0
    for action in actions:
        obs, reward, terminated, _, info = env.step(action)
        next_state = 0 if terminated else info["state"]
        out.append((state, action, float(reward), next_state, terminated))
        if terminated:
            break
        state = next_state
    return out


@pytest.mark.parametrize(("n", "layout_seed"), [(3, 0), (4, 5), (5, 2)])
def test_equals_all_action_sequences_executed_until_termination(n: int, layout_seed: int) -> None:
    """The paper's recipe, literally: all 2^n sequences through the env."""
    env = BlindCliffwalkEnv(n=n, layout_seed=layout_seed)
    expected: Counter = Counter()
    for actions in itertools.product((0, 1), repeat=n):
        expected.update(env_transitions(env, actions))
    memory = paper_memory(env, np.random.default_rng(1))
    assert rows(memory) == expected
    assert sum(expected.values()) == 2 ** (n + 1) - 2
    assert memory.rewards.sum() == 1.0


def test_observations_are_the_envs() -> None:
    """One-hot states, the all-zeros vector after termination."""
    env = BlindCliffwalkEnv(n=3, layout_seed=4)
    memory = paper_memory(env, np.random.default_rng(0))
    eye = np.eye(3, dtype=np.float32)
    np.testing.assert_array_equal(memory.obs, eye[memory.states])
    expected_next = np.where(memory.terminated[:, None], 0.0, eye[memory.next_states])
    np.testing.assert_array_equal(memory.next_obs, expected_next)


def test_order_is_drawn_from_the_generator() -> None:
    env = BlindCliffwalkEnv(n=4)
    a, b, c = (paper_memory(env, np.random.default_rng(s)) for s in (0, 0, 1))
    np.testing.assert_array_equal(a.states, b.states)
    assert not np.array_equal(a.actions * 10 + a.states, c.actions * 10 + c.states)


def test_fill_buffer_puts_row_k_in_slot_k_at_equal_priority() -> None:
    env = BlindCliffwalkEnv(n=3)
    memory = paper_memory(env, np.random.default_rng(0))
    buffer = fill_buffer(memory, ProportionalSampler(alpha=0.6), seed=0)
    assert len(buffer) == buffer.capacity == 14
    storage = buffer.storage
    np.testing.assert_array_equal(storage.actions, memory.actions)
    np.testing.assert_array_equal(storage.rewards, memory.rewards)
    np.testing.assert_array_equal(storage.terminated, memory.terminated)
    np.testing.assert_array_equal(storage.obs, memory.obs)
    np.testing.assert_allclose(buffer.probabilities(), np.full(14, 1 / 14))
    assert len(fill_buffer(memory, UniformSampler(), seed=0)) == 14


def test_memory_size_rejects_small_n() -> None:
    with pytest.raises(ValueError, match="n must be an integer >= 2"):
        memory_size(1)
