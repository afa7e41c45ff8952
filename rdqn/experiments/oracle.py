"""The PER paper's oracle: replay the transition that most reduces the global loss, in hindsight.

Schaul et al. 2015 (arXiv:1511.05952), section 3.1: "an oracle that greedily selects the
transition that maximally reduces the global loss in its current state (in hindsight, after the
parameter update)". Each update tries every distinct transition k on a copy of the learner (one
update on k alone), scores the global loss after it, and replays the best (the first on ties, in
the memory's distinct order (s, wrong/right) for s = 0..n-1). The paper does not define the
global loss further; three readings are offered (`ORACLE_LOSSES`)::

    q-error    sum_(s,a) (Q(s, a) - Q*(s, a))^2           the error the figure counts down, which
                                                           only an oracle knows (the default)
    td         sum_k delta_k(Q)^2                          the squared TD error of each distinct
                                                           transition, counted once
    td-memory  (1/N) sum_k m_k delta_k(Q)^2                the same over every stored copy

``td-memory`` is myopic on this task: raising Q(s, right) towards its target raises the TD error
of (s - 1, right), which the memory holds twice as often, so the reward's value creeps back to
the start slowly (18,870 updates at n = 8, more than uniform replay; ``q-error`` 197, ``td``
224). Identical copies give identical updates, so trying the 2n distinct transitions is the same
as trying all N = 2^(n+1) - 2 slots: an update costs O(n^2) arithmetic whatever N is, and the
oracle is feasible at every n the experiment runs (n = 16: 32 trial updates of a 16 x 2 table
per replayed transition).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rdqn.experiments.cliffwalk_memory import CliffwalkMemory
from rdqn.experiments.tabular import TabularLearner
from rdqn.validation import check_choice

__all__ = ["ORACLE_LOSSES", "global_loss", "oracle_choice", "oracle_update"]

ORACLE_LOSSES: tuple[str, ...] = ("q-error", "td", "td-memory")
"""The readings of the paper's "global loss" (module docstring); the first is the default."""


def global_loss(
    learner: TabularLearner, memory: CliffwalkMemory, q_star: NDArray[np.float64], kind: str
) -> float:
    """The global loss ``kind`` (`ORACLE_LOSSES`) of the learner's current table."""
    if kind == "q-error":
        error = learner.q - q_star
        return float((error * error).sum())
    delta = learner.td_errors(*memory.batch(memory.distinct))
    if kind == "td":
        return float(np.dot(delta, delta))
    return float(np.dot(memory.counts, delta * delta) / memory.counts.sum())


def oracle_choice(
    learner: TabularLearner,
    memory: CliffwalkMemory,
    q_star: NDArray[np.float64],
    kind: str = ORACLE_LOSSES[0],
) -> tuple[int, float]:
    """(k, L): the distinct transition k whose update leaves the smallest global loss L."""
    check_choice("oracle loss", kind, ORACLE_LOSSES)
    transitions = memory.batch(memory.distinct)
    best, best_loss = -1, np.inf
    for k in range(memory.counts.shape[0]):
        trial = learner.copy()
        trial.learn(*(column[k : k + 1] for column in transitions))
        loss = global_loss(trial, memory, q_star, kind)
        if loss < best_loss:
            best, best_loss = k, loss
    return best, best_loss


def oracle_update(
    learner: TabularLearner,
    memory: CliffwalkMemory,
    q_star: NDArray[np.float64],
    kind: str = ORACLE_LOSSES[0],
) -> int:
    """Replay the oracle's choice on ``learner`` (one update); returns its memory row."""
    k, _ = oracle_choice(learner, memory, q_star, kind)
    row = int(memory.distinct[k])
    learner.learn(*memory.batch(slice(row, row + 1)))
    return row
