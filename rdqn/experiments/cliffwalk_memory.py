"""The replay memory of the PER paper's Blind Cliffwalk figure, built once and then held fixed.

Schaul et al. 2015 (arXiv:1511.05952), section 3.1 and appendix B.1: the memory is filled by
executing every one of the 2^n action sequences of length n until the episode terminates. A
sequence whose first wrong action comes at step s + 1 (state s) ends there; exactly one sequence
(all right) reaches the goal. Counting the sequences that reach state s (their first s actions are
right: 2^(n-s) of them), half take the wrong action there and half the right one, so::

    (s, right) and (s, wrong) are each stored 2^(n-1-s) times,   s = 0 .. n-1
    N = sum_s 2 * 2^(n-1-s) = 2^(n+1) - 2 transitions in all, one of them rewarded

which is the frequency at which a uniformly random behaviour policy meets them. For n = 2::

    (0, right) x2   (0, wrong) x2   (1, right, r=1) x1   (1, wrong) x1      N = 6

The transitions are stored in random order (a permutation drawn from the trial's generator) with
the environment's own observations: the one-hot state, and the all-zeros vector after
termination (`rdqn.envs.blind_cliffwalk`). Nothing writes to the memory afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rdqn.envs.blind_cliffwalk import BlindCliffwalkEnv
from rdqn.replay import ReplayBuffer, Sampler
from rdqn.validation import check_integer

__all__ = ["CliffwalkMemory", "fill_buffer", "memory_size", "paper_memory"]


def memory_size(n: int) -> int:
    """N = 2^(n+1) - 2: the transitions of all 2^n action sequences, each run to termination."""
    check_integer("n", n, minimum=2)
    return 2 ** (n + 1) - 2


@dataclass(frozen=True)
class CliffwalkMemory:
    """The memory as parallel arrays, one row per stored transition (shape (N,) each), plus its
    2n distinct transitions with their multiplicities (what the oracle weighs).

    ``next_states`` is the index of the next state; it is 0 for a terminated transition, whose
    next state is never bootstrapped from (``terminated`` is True there).
    """

    n: int
    states: NDArray[np.int64]
    actions: NDArray[np.int64]
    rewards: NDArray[np.float64]
    next_states: NDArray[np.int64]
    terminated: NDArray[np.bool_]
    obs: NDArray[np.float32]
    next_obs: NDArray[np.float32]
    distinct: NDArray[np.int64]
    """Row of each distinct transition's first copy, in the order (s, 0), (s, 1) for s = 0..n-1."""
    counts: NDArray[np.int64]
    """How many times each distinct transition is stored."""

    def __len__(self) -> int:
        return int(self.states.shape[0])

    def batch(self, rows: Any) -> tuple[NDArray, ...]:
        """(states, actions, rewards, next_states, terminated) at ``rows`` (indices or a slice):
        the arguments of `TabularLearner.learn` and `TabularLearner.td_errors`."""
        columns = (self.states, self.actions, self.rewards, self.next_states, self.terminated)
        return tuple(column[rows] for column in columns)


def _step_from(env: BlindCliffwalkEnv, state: int, action: int) -> tuple[np.ndarray, ...]:
    """(o_s, o', r, terminated) of taking ``action`` in ``state``, by walking there in ``env``."""
    obs, _ = env.reset()
    for s in range(state):
        obs, *_ = env.step(int(env.right_actions[s]))
    next_obs, reward, terminated, _, _ = env.step(action)
    return obs, next_obs, float(reward), bool(terminated)


def paper_memory(env: BlindCliffwalkEnv, rng: np.random.Generator) -> CliffwalkMemory:
    """The memory of the module docstring for ``env`` (its n and its right actions), stored in
    an order drawn from ``rng``."""
    n = env.n
    rows: list[tuple[int, int, float, int, bool]] = []
    observations: list[tuple[np.ndarray, np.ndarray]] = []
    counts = []
    for s in range(n):
        for action in (0, 1):
            obs, next_obs, reward, terminated = _step_from(env, s, action)
            rows.append((s, action, reward, 0 if terminated else s + 1, terminated))
            observations.append((obs, next_obs))
            counts.append(2 ** (n - 1 - s))
    copies = np.repeat(np.arange(2 * n), counts)
    order = copies[rng.permutation(copies.shape[0])]
    table = np.array([r[:4] for r in rows], dtype=np.float64)
    first = np.array([np.flatnonzero(order == k)[0] for k in range(2 * n)], dtype=np.int64)
    return CliffwalkMemory(
        n=n,
        states=table[order, 0].astype(np.int64),
        actions=table[order, 1].astype(np.int64),
        rewards=table[order, 2],
        next_states=table[order, 3].astype(np.int64),
        terminated=np.array([r[4] for r in rows])[order],
        obs=np.stack([o for o, _ in observations])[order],
        next_obs=np.stack([o for _, o in observations])[order],
        distinct=first,
        counts=np.array(counts, dtype=np.int64),
    )


def fill_buffer(memory: CliffwalkMemory, sampler: Sampler, seed: int) -> ReplayBuffer:
    """A `ReplayBuffer` of exactly ``len(memory)`` slots holding the memory, row k in slot k
    (every transition enters with the sampler's maximum priority, 1.0)."""
    buffer = ReplayBuffer(len(memory), (memory.n,), window=1, sampler=sampler, seed=seed)
    for k in range(len(memory)):
        slot = buffer.add(
            memory.obs[k],
            int(memory.actions[k]),
            float(memory.rewards[k]),
            memory.next_obs[k],
            bool(memory.terminated[k]),
            False,
        )
        assert slot == k
    return buffer
