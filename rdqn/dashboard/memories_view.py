""" "Memories replayed": the stored transitions drawn as small pictures, with their numbers, and
the one a student clicks carried to "One update by hand".

No Streamlit here: `memory_table` builds the table's rows (a picture of each memory's pose as an
SVG data URI, |δ|, p, P(i), w, age, times replayed), `chosen_memory` the plain record of one row
that the by-hand page shows. The page (pages/internals.py) lays them out.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rdqn.classroom.worked_example import FORMULAS, Step, tex_p
from rdqn.classroom.worked_example import tex as tex_number
from rdqn.dashboard.watch import ACTION_LABELS, FRAME_COLORS
from rdqn.envs.poses import pose_kind
from rdqn.replay.priorities import priority
from rdqn.training.memory_view import Memories, SequenceMemories

__all__ = [
    "LIST_NAMES",
    "ChosenMemory",
    "chosen_memory",
    "memory_steps",
    "memory_table",
    "pose_svg",
    "sequence_table",
]

LIST_NAMES: dict[str, str] = {
    "last batch": "The last batch",
    "top priority": "Top by priority",
    "uniform sample": "A uniform sample (for contrast)",
}
"""The lists on offer, as the page names them."""


def _data_uri(svg: str) -> str:
    """base64, the form the table's image cells draw (a URL-encoded SVG stays blank there)."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def pose_svg(
    kind: str, pose: np.ndarray, action: int, terminated: bool, row_size: int | None = None
) -> str:
    """A small picture of one stored observation: CartPole's cart and pole at its angle with the
    push taken, a row's state with the step taken, the market's position, a MinAtar frame; a red
    bar marks a
    terminal transition. An SVG data URI (96 x 48)."""
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="96" height="48" viewBox="0 0 96 48">']
    if kind == "cartpole":
        x, theta = float(pose[0]), float(pose[1])
        cx = 48 + x * 16
        parts.append('<line x1="4" y1="40" x2="92" y2="40" stroke="#999" stroke-width="1.5"/>')
        parts.append(f'<rect x="{cx - 7:.1f}" y="33" width="14" height="7" fill="#1f3b73"/>')
        tip_x, tip_y = cx + 28 * math.sin(theta), 33 - 28 * math.cos(theta)
        parts.append(
            f'<line x1="{cx:.1f}" y1="33" x2="{tip_x:.1f}" y2="{tip_y:.1f}" stroke="#d4a017" '
            'stroke-width="3" stroke-linecap="round"/>'
        )
        side = 1 if action == 1 else -1
        ax = cx + side * 9
        parts.append(
            f'<path d="M{ax:.1f},33 L{ax + side * 7:.1f},36.5 L{ax:.1f},40 Z" fill="#ef553b"/>'
        )
    elif kind == "row":
        n = max(int(row_size or 1), 1)
        width = 88 / n
        state = int(pose[0])
        for i in range(n):
            fill = "#c9d8f0" if i == state else "#f0f2f6"
            parts.append(
                f'<rect x="{4 + i * width:.1f}" y="16" width="{width - 1:.1f}" height="16" '
                f'fill="{fill}" stroke="#999" stroke-width="0.5"/>'
            )
        if state >= 0:
            parts.append(
                f'<circle cx="{4 + (state + 0.5) * width:.1f}" cy="24" r="{min(6, width / 3):.1f}"'
                ' fill="#1f3b73"/>'
            )
        parts.append(f'<text x="4" y="44" font-size="9" fill="#333">a={action}</text>')
    elif kind == "frame":  # a MinAtar frame, 10 x 10 cells coloured as the player colours them
        for i, code in enumerate(np.asarray(pose, dtype=np.int64)):
            if code:
                parts.append(
                    f'<rect x="{23 + (i % 10) * 5}" y="{(i // 10) * 4.5 + 2:.1f}" width="5" '
                    f'height="4.5" fill="{FRAME_COLORS[code]}"/>'
                )
        parts.append('<rect x="23" y="2" width="50" height="45" fill="none" stroke="#999"/>')
        parts.append(f'<text x="76" y="44" font-size="9" fill="#333">a={action}</text>')
    else:  # the market: the position held before, the one taken
        colors = {1: "#2ca02c", -1: "#d62728", 0: "#999"}
        held = int(pose[0])
        taken = (0, 1, -1)[action]
        parts.append(f'<rect x="8" y="14" width="30" height="20" fill="{colors[held]}"/>')
        parts.append('<path d="M42,24 L54,24" stroke="#333" stroke-width="2"/>')
        parts.append(f'<rect x="58" y="14" width="30" height="20" fill="{colors[taken]}"/>')
    if terminated:
        parts.append('<rect x="0" y="0" width="96" height="4" fill="#d62728"/>')
    parts.append("</svg>")
    return _data_uri("".join(parts))


def memory_table(memories: Memories, list_name: str) -> pd.DataFrame:
    """One row per memory of the list: its picture and its numbers (the explorer's table)."""
    rows = memories.lists[list_name]
    terms = memories.terms[list_name]
    kind = pose_kind(memories.env_id)
    labels = ACTION_LABELS[memories.env_id]
    return pd.DataFrame(
        {
            "memory": [
                pose_svg(kind, pose, int(a), bool(d), memories.row_size)
                for pose, a, d in zip(rows.poses, rows.actions, rows.terminated, strict=True)
            ],
            "slot": rows.slots,
            "action": [labels[int(a)] for a in rows.actions],
            "reward": rows.rewards,
            "terminal": rows.terminated,
            "td_abs": np.abs(terms["td_error"]),
            "priority": rows.priorities,
            "probability": rows.probabilities,
            "weight": rows.weights,
            "age": rows.ages,
            "replayed": rows.replayed,
        }
    )


def sequence_table(memories: SequenceMemories, list_name: str) -> pd.DataFrame:
    """One row per stored sequence of the list: its slot, steps, burn-in and numbers."""
    rows = memories.lists[list_name]
    return pd.DataFrame(
        {
            "slot": rows.slots,
            "steps": rows.lengths,
            "first": rows.starts_episode,
            "burn_in": rows.burn_ins,
            "td_abs": rows.mixed,
            "priority": rows.priorities,
            "probability": rows.probabilities,
            "weight": rows.weights,
            "age": rows.ages,
        }
    )


@dataclass(frozen=True)
class ChosenMemory:
    """One stored transition's numbers for "One update by hand", as plain values."""

    run_id: str
    slot: int
    env_steps: int
    list_name: str
    reward: float
    terminated: bool
    gamma: float
    q_taken: float
    next_value: float
    target: float
    td_error: float
    stored_priority: float
    probability: float
    weight: float
    beta: float
    size: int
    alpha: float | None
    eps: float
    double_dqn: bool
    is_normalization: str
    new_priority: float
    picture: str


def chosen_memory(memories: Memories, run_id: str, list_name: str, row: int) -> ChosenMemory:
    """The numbers of row ``row`` of list ``list_name``; its new priority |δ| + ε is what the
    next update would store (`rdqn.replay.priorities.priority`)."""
    rows = memories.lists[list_name]
    terms = memories.terms[list_name]
    td_error = float(terms["td_error"][row])
    return ChosenMemory(
        run_id=run_id,
        slot=int(rows.slots[row]),
        env_steps=memories.env_steps,
        list_name=list_name,
        reward=float(rows.rewards[row]),
        terminated=bool(rows.terminated[row]),
        gamma=memories.gamma,
        q_taken=float(terms["q_taken"][row]),
        next_value=float(terms["next_value"][row]),
        target=float(terms["target"][row]),
        td_error=td_error,
        stored_priority=float(rows.priorities[row]),
        probability=float(rows.probabilities[row]),
        weight=float(rows.weights[row]),
        beta=memories.beta,
        size=memories.size,
        alpha=memories.alpha,
        eps=memories.eps,
        double_dqn=memories.double_dqn,
        is_normalization=memories.is_normalization,
        new_priority=float(priority(abs(td_error), memories.eps)),
        picture=pose_svg(
            pose_kind(memories.env_id),
            rows.poses[row],
            int(rows.actions[row]),
            bool(rows.terminated[row]),
            memories.row_size,
        ),
    )


IS_WEIGHT_FORMULAS = {
    "global": "IS weight",
    "batch": "IS weight (batch)",
    "none": "IS weight (none)",
}
"""The formula of each IS-weight normalisation (`rdqn.replay.weights`), by its name."""


def tex(x: float) -> str:
    """A memory's number in LaTeX, to 5 significant digits (its P(i) is often below 0.01)."""
    return tex_number(x, significant=5)


def memory_steps(chosen: ChosenMemory) -> list[Step]:
    """The update's steps for a stored memory, its own numbers substituted (LaTeX): the target
    and TD error by the current networks, P(i) and w_i under the current priorities and β, and
    the priority the next update of it would store."""
    r, g, d = chosen.reward, chosen.gamma, int(chosen.terminated)
    target = "target (Double DQN)" if chosen.double_dqn else "target"
    if chosen.alpha is None:  # uniform replay: no priorities
        probability = (
            r"P(i) = \frac{1}{N}",
            rf"P = \frac{{1}}{{{chosen.size:,}}} = {tex(chosen.probability)}",
        )
    else:
        probability = (
            FORMULAS["sampling probability"],
            rf"p_i = {tex(chosen.stored_priority)},\ \alpha = {tex(chosen.alpha)}"
            rf"\ \Rightarrow\ P(i) = {tex(chosen.probability)}",
        )
    nxp = chosen.size * chosen.probability
    return [
        Step(
            target,
            FORMULAS[target],
            rf"y = {tex(r)} + {tex(g)} \times (1 - {d}) \times {tex_p(chosen.next_value)}"
            rf" = {tex(chosen.target)}",
        ),
        Step(
            "TD error",
            FORMULAS["TD error"],
            rf"\delta = {tex(chosen.target)} - {tex_p(chosen.q_taken)} = {tex(chosen.td_error)}",
        ),
        Step("sampling probability", *probability),
        Step(
            "IS weight",
            FORMULAS[IS_WEIGHT_FORMULAS[chosen.is_normalization]],
            rf"N\,P(i) = {chosen.size:,} \times {tex(chosen.probability)} = {tex(nxp)},"
            rf"\ \beta = {tex(chosen.beta)}\ \Rightarrow\ w_i = {tex(chosen.weight)}",
        ),
        Step(
            "new priority",
            FORMULAS["new priority"],
            rf"p'_i = {tex(abs(chosen.td_error))} + {tex(chosen.eps)} = {tex(chosen.new_priority)}",
        ),
    ]
