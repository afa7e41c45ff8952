"""One prioritized DQN update worked by hand, for the classroom.

Plain numpy/pandas, no plotting: the "One update by hand" page turns these numbers into widgets
and figures. Vocabulary (priority, mass, probability, IS weight) and the formulas of priority
and mass as in `rdqn.replay.priorities`.

**One update by hand.** For a mini-batch of B transitions (r_i, d_i = terminated_i, Q(s_i, a_i),
max_a' Q_target(s'_i, a')) whose current priorities are, here, the whole buffer of N
transitions (N = B; N counts what P(i) and the weights range over, B what the loss averages):

    y_i      = r_i + gamma * (1 - d_i) * max_a' Q_target(s'_i, a')            (terminal: y_i = r_i)
    delta_i  = y_i - Q(s_i, a_i)
    L_i      = 0.5 delta_i^2 if |delta_i| <= 1 else |delta_i| - 0.5            (Huber)
             = delta_i^2                                                       (MSE, as torch's)
    P(i)     = p_i^alpha / sum_k p_k^alpha       (current priorities: how the batch was drawn)
    w_i      = (N P(i))^-beta / max_j (N P(j))^-beta
    loss     = (1/B) sum_i w_i L_i               (weights multiply before the batch mean)
    p'_i     = |delta_i| + eps,  m'_i = p'_i^alpha,  P'(i) = m'_i / sum_k m'_k   (the next draw)

The IS weights use the probabilities the batch was *drawn* with, i.e. the current priorities; the
new priorities only matter for the next draw (Schaul et al. 2015, Algorithm 1, lines 9-12; the
same order as `rdqn.learn.agent.DQNAgent.learn` followed by `update_priorities`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from rdqn.classroom.tree_demo import (
    MAX_MAGNITUDE,
    _as_number,
    _show,
    importance_weights,
    masses,
)
from rdqn.learn.agent_config import LOSSES
from rdqn.learn.targets import discounts, td_targets
from rdqn.replay.priorities import priority
from rdqn.validation import check_choice, is_real

__all__ = [
    "FORMULAS",
    "INPUT_COLUMNS",
    "LOSSES",
    "RESULT_COLUMNS",
    "Step",
    "UpdateExample",
    "UpdateResult",
    "default_example",
    "example_frame",
    "example_from_frame",
    "step_equations",
    "tex",
    "tex_p",
    "worked_update",
]

INPUT_COLUMNS: tuple[str, ...] = ("reward", "terminated", "q", "next_max_q", "priority")
"""Columns of the editable table of transitions (`example_frame`, `example_from_frame`)."""
RESULT_COLUMNS: tuple[str, ...] = (
    "target",
    "td_error",
    "loss",
    "probability",
    "weight",
    "weighted_loss",
    "new_priority",
    "new_mass",
    "new_probability",
)
"""Columns of `UpdateResult.table`, in the order the update computes them."""


# --------------------------------------------------------------------------- one update by hand


@dataclass(frozen=True, kw_only=True)
class UpdateExample:
    """The inputs of one prioritized DQN update on a small batch (one entry per row)."""

    rewards: tuple[float, ...]
    """r_i, the reward of transition i."""
    terminated: tuple[bool, ...]
    """Whether s'_i is terminal (then the target is just r_i)."""
    q_values: tuple[float, ...]
    """Q(s_i, a_i), the online network's value of the action taken."""
    next_max_q: tuple[float, ...]
    """max_a' Q_target(s'_i, a'), the target network's best value in the next state."""
    priorities: tuple[float, ...]
    """The current priorities p_i (> 0) the batch was drawn with; the rows are the whole buffer."""
    gamma: float = 0.99
    """Discount factor, in [0, 1]."""
    alpha: float = 0.6
    """Prioritization exponent, in [0, 1] (0 = uniform)."""
    beta: float = 0.4
    """IS correction exponent, in [0, 1] (1 = full correction)."""
    eps: float = 0.01
    """Added to |delta| so that no priority is 0."""
    loss: str = "huber"
    """Per-sample loss: "huber" or "mse"."""

    def __post_init__(self) -> None:
        rows = len(self.rewards)
        if rows < 1:
            raise ValueError("rewards must hold at least one row")
        for name in ("rewards", "terminated", "q_values", "next_max_q", "priorities"):
            values = getattr(self, name)
            if len(values) != rows:
                raise ValueError(f"{name} must have {rows} rows like rewards, got {len(values)}")
            for i, value in enumerate(values, start=1):
                if name == "terminated":
                    if not isinstance(value, (bool, np.bool_)):
                        raise ValueError(
                            f"terminated, row {i}: must be True or False, got {value!r}"
                        )
                    continue
                if not (is_real(value) and abs(value) <= MAX_MAGNITUDE):
                    raise ValueError(
                        f"{name}, row {i}: must be a number in "
                        f"[-{MAX_MAGNITUDE:g}, {MAX_MAGNITUDE:g}], got {value!r}"
                    )
                if name == "priorities" and not value > 0:
                    raise ValueError(f"priorities, row {i}: must be > 0, got {value!r}")
        for name, low, high in (
            ("gamma", 0.0, 1.0),
            ("alpha", 0.0, 1.0),
            ("beta", 0.0, 1.0),
            ("eps", 0.0, MAX_MAGNITUDE),
        ):
            value = getattr(self, name)
            if not (is_real(value) and low <= value <= high):
                raise ValueError(f"{name} must be a number in [{low:g}, {high:g}], got {value!r}")
        check_choice("loss", self.loss, LOSSES)

    @property
    def rows(self) -> int:
        return len(self.rewards)


@dataclass(frozen=True)
class UpdateResult:
    """Every intermediate quantity per row (`table`, index 1..B, `RESULT_COLUMNS`) and the loss."""

    table: pd.DataFrame
    loss: float


def default_example() -> UpdateExample:
    """Four transitions, row 2 terminal; row 1 (|delta| > 1) and 4 (delta < -1) hit Huber's
    linear part, rows 2 and 3 its quadratic part."""
    return UpdateExample(
        rewards=(1.0, 1.0, 0.0, -1.0),
        terminated=(False, True, False, False),
        q_values=(2.0, 0.5, 1.2, 0.8),
        next_max_q=(2.5, 3.0, 1.0, 0.2),
        priorities=(0.6, 1.2, 0.3, 0.9),
    )


def _per_sample_loss(delta: NDArray[np.float64], loss: str) -> NDArray[np.float64]:
    """L(delta) per row: the learner's own `rdqn.learn.losses.td_loss`, called plain (L is even,
    so the sign convention of its error does not matter)."""
    from rdqn.learn.losses import td_loss

    huber = loss == "huber"
    return np.array([td_loss.py_func(float(d), huber)[0] for d in delta], dtype=np.float64)


def worked_update(example: UpdateExample) -> UpdateResult:
    """Compute one prioritized update step by step (formulas in the module docstring)."""
    r = np.asarray(example.rewards, dtype=np.float64)
    done = np.asarray(example.terminated, dtype=np.float64)
    # The learner's own target, the table's max_a' Q_target(s'_i, a') as a one-action next state.
    next_max_q = np.asarray(example.next_max_q, dtype=np.float64)[:, None]
    target = td_targets(r, discounts(example.gamma, done), next_max_q)
    td_error = target - np.asarray(example.q_values, dtype=np.float64)
    per_sample = _per_sample_loss(td_error, example.loss)
    current = masses(example.priorities, example.alpha)
    probability = current / current.sum()
    weight = importance_weights(probability, example.beta)
    weighted = weight * per_sample
    new_priority = priority(td_error, example.eps)
    new_mass = masses(new_priority, example.alpha)
    new_total = new_mass.sum()
    # eps = 0 and every delta = 0 leave no mass at all: nothing could be drawn next.
    new_probability = new_mass / new_total if new_total > 0 else np.full(example.rows, np.nan)
    table = pd.DataFrame(
        {
            "target": target,
            "td_error": td_error,
            "loss": per_sample,
            "probability": probability,
            "weight": weight,
            "weighted_loss": weighted,
            "new_priority": new_priority,
            "new_mass": new_mass,
            "new_probability": new_probability,
        },
        index=pd.RangeIndex(1, example.rows + 1, name="row"),
    )
    return UpdateResult(table, float(weighted.mean()))  # (1/B) sum: B = the batch's rows


def example_frame(example: UpdateExample) -> pd.DataFrame:
    """The per-row inputs as a table with `INPUT_COLUMNS` (index `row`, 1..N), for editing."""
    return pd.DataFrame(
        {
            "reward": example.rewards,
            "terminated": example.terminated,
            "q": example.q_values,
            "next_max_q": example.next_max_q,
            "priority": example.priorities,
        },
        index=pd.RangeIndex(1, example.rows + 1, name="row"),
    )


def example_from_frame(frame: pd.DataFrame, **params: Any) -> UpdateExample:
    """Parse an edited `example_frame`; ValueError naming the row and column of a bad cell.

    `params` are the scalar fields (gamma, alpha, beta, eps, loss).
    """
    missing = [c for c in INPUT_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"the table lacks the column(s) {', '.join(missing)}")
    columns: dict[str, list[Any]] = {c: [] for c in INPUT_COLUMNS}
    for i, (_, record) in enumerate(frame.iterrows(), start=1):
        for name in INPUT_COLUMNS:
            value = record[name]
            if name == "terminated":
                flag = _as_flag(value)
                if flag is None:
                    raise ValueError(
                        f"row {i}, terminated: must be ticked or not, got {_show(value)}"
                    )
                columns[name].append(flag)
                continue
            number = _as_number(value)
            if number is None or not math.isfinite(number):
                raise ValueError(f"row {i}, {name}: {_show(value)} is not a number")
            columns[name].append(number)
    return UpdateExample(
        rewards=tuple(columns["reward"]),
        terminated=tuple(columns["terminated"]),
        q_values=tuple(columns["q"]),
        next_max_q=tuple(columns["next_max_q"]),
        priorities=tuple(columns["priority"]),
        **params,
    )


FORMULAS: dict[str, str] = {
    "target": r"y_i = r_i + \gamma\,(1 - d_i)\,\max_{a'} Q_\text{target}(s'_i, a')",
    "target (Double DQN)": r"y_i = r_i + \gamma\,(1 - d_i)\,Q_\text{target}(s'_i, \arg\max_{a'}"
    r" Q(s'_i, a'))",
    "TD error": r"\delta_i = y_i - Q(s_i, a_i)",
    "sampling probability": r"P(i) = \frac{p_i^\alpha}{\sum_k p_k^\alpha}",
    "IS weight": r"w_i = \frac{(N\,P(i))^{-\beta}}{\max_j (N\,P(j))^{-\beta}}",
    "IS weight (batch)": r"w_i = \frac{(N\,P(i))^{-\beta}}{\max_{j \in \text{batch}}"
    r" (N\,P(j))^{-\beta}}",
    "IS weight (none)": r"w_i = (N\,P(i))^{-\beta}",
    "new priority": r"p'_i = |\delta_i| + \epsilon",
}
"""The update's formulas as LaTeX, by step: this page's and the memory explorer's."""


@dataclass(frozen=True)
class Step:
    """One step of the update: its name, the general formula and the row's numbers (LaTeX)."""

    name: str
    formula: str
    numbers: str


def step_equations(example: UpdateExample, result: UpdateResult, row: int) -> list[Step]:
    """The update's steps with row `row`'s (1-based) actual numbers substituted, as LaTeX."""
    if not 1 <= row <= example.rows:
        raise ValueError(f"row must be in [1, {example.rows}], got {row}")
    k = row - 1
    t = result.table.iloc[k]
    n = batch = example.rows  # the batch is the whole buffer here: N = B
    done = int(example.terminated[k])
    r, q, nq = example.rewards[k], example.q_values[k], example.next_max_q[k]
    g, a, b = example.gamma, example.alpha, example.beta
    current = masses(example.priorities, a)
    raw = importance_weights(result.table["probability"].to_numpy(), b, normalization="none")
    new_total = float(result.table["new_mass"].sum())
    weighted_sum = float(result.table["weighted_loss"].sum())
    delta = float(t["td_error"])
    if example.loss == "mse":
        loss_formula = r"L(\delta) = \delta^2"
        loss_numbers = rf"L_{{{row}}} = {tex_p(delta)}^2 = {tex(t['loss'])}"
    elif abs(delta) <= 1:
        loss_formula = r"L(\delta) = \tfrac12 \delta^2 \text{ if } |\delta| \le 1"
        loss_numbers = rf"L_{{{row}}} = 0.5 \times {tex_p(delta)}^2 = {tex(t['loss'])}"
    else:
        loss_formula = r"L(\delta) = |\delta| - \tfrac12 \text{ if } |\delta| > 1"
        loss_numbers = rf"L_{{{row}}} = {tex(abs(delta))} - 0.5 = {tex(t['loss'])}"
    return [
        Step(
            "target",
            FORMULAS["target"],
            rf"y_{{{row}}} = {tex(r)} + {tex(g)} \times (1 - {done}) \times {tex_p(nq)}"
            rf" = {tex(t['target'])}",
        ),
        Step(
            "TD error",
            FORMULAS["TD error"],
            rf"\delta_{{{row}}} = {tex(t['target'])} - {tex_p(q)} = {tex(delta)}",
        ),
        Step("per-sample loss", loss_formula, loss_numbers),
        Step(
            "sampling probability",
            FORMULAS["sampling probability"],
            rf"P({row}) = \frac{{{tex(example.priorities[k])}^{{{tex(a)}}}}}"
            rf"{{{tex(current.sum())}}} = \frac{{{tex(current[k])}}}{{{tex(current.sum())}}}"
            rf" = {tex(t['probability'])}",
        ),
        Step(
            "IS weight",
            FORMULAS["IS weight"],
            rf"w_{{{row}}} = \frac{{({n} \times {tex(t['probability'])})^{{-{tex(b)}}}}}"
            rf"{{{tex(raw.max())}}} = \frac{{{tex(raw[k])}}}{{{tex(raw.max())}}}"
            rf" = {tex(t['weight'])}",
        ),
        Step(
            "weighted loss",
            r"w_i L_i",
            rf"w_{{{row}}} L_{{{row}}} = {tex(t['weight'])} \times {tex(t['loss'])}"
            rf" = {tex(t['weighted_loss'])}",
        ),
        Step(
            "batch loss",
            r"\mathcal{L} = \frac{1}{B} \sum_{i=1}^{B} w_i L_i",
            rf"\mathcal{{L}} = \frac{{1}}{{{batch}}} \times {tex(weighted_sum)}"
            rf" = {tex(result.loss)}",
        ),
        Step(
            "new priority",
            FORMULAS["new priority"],
            rf"p'_{{{row}}} = {tex(abs(delta))} + {tex(example.eps)} = {tex(t['new_priority'])}",
        ),
        Step(
            "next sampling probability",
            r"P'(i) = \frac{{p'_i}^\alpha}{\sum_k {p'_k}^\alpha}",
            rf"P'({row}) = \frac{{{tex(t['new_priority'])}^{{{tex(a)}}}}}{{{tex(new_total)}}}"
            rf" = {tex(t['new_probability'])}",
        ),
    ]


# --------------------------------------------------------------------------- helpers


def _as_flag(value: object) -> bool | None:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if is_real(value) and float(value) in (0.0, 1.0):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def tex(x: float, significant: int | None = None) -> str:
    """A number for a LaTeX line: up to 4 decimals (``significant``: that many significant
    digits), scientific beyond [1e-3, 1e5)."""
    x = float(x)
    if not math.isfinite(x):
        return r"\text{undefined}"
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e5:
        if significant is not None:
            return f"{x:.{significant}g}"
        return f"{x:.4f}".rstrip("0").rstrip(".")
    digits = 3 if significant is None else significant - 1
    mantissa, exponent = f"{x:.{digits}e}".split("e")
    return rf"{mantissa.rstrip('0').rstrip('.')} \times 10^{{{int(exponent)}}}"


def tex_p(x: float) -> str:
    """`tex(x)`, in parentheses when negative (so "- (-0.2)" reads right)."""
    return f"({tex(x)})" if x < 0 else tex(x)
