"""The sum-tree page's session state: the priorities being edited and the batches drawn from them.

Keys (defaults in `rdqn.dashboard.state.init_state`): ``tree.base`` (the priorities the editor
starts from), ``tree.priorities`` (as edited), ``tree.editor`` (a counter: a new editor forgets old
edits), ``tree.rng`` (the draws' generator), ``tree.uniforms`` (the last batch's draws) and
``tree.tally`` (counts of every batch drawn). Widget keys: ``tree.leaves``, ``tree.alpha``,
``tree.beta``, ``tree.batch``.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from rdqn.classroom import tree_demo
from rdqn.dashboard.state import TREE_SEED
from rdqn.replay.sumtree import SumTree

__all__ = [
    "clear_draws",
    "draw_batch",
    "draw_many",
    "drawn_counts",
    "set_priorities",
    "shown_batch",
]


def set_priorities(values: np.ndarray) -> None:
    """Start the editor (and the tree) from these priorities."""
    st.session_state["tree.base"] = st.session_state["tree.priorities"] = [float(v) for v in values]
    st.session_state["tree.editor"] += 1


def draw_batch() -> None:
    """One stratified batch: a uniform draw per segment. Its leaves count in the tally too, so
    the frequency chart grows with every batch drawn, one at a time or many."""
    ss = st.session_state
    ss["tree.uniforms"] = ss["tree.rng"].random(ss["tree.batch"])
    leaf_masses = tree_demo.masses(ss["tree.priorities"], ss["tree.alpha"])
    batch = tree_demo.draw_batch(tree_demo.build_tree(leaf_masses), ss["tree.uniforms"])
    counts = np.bincount(batch.leaves, minlength=len(leaf_masses))
    ss["tree.tally"] = tree_demo.tally_with(ss["tree.tally"], leaf_masses, counts)


def draw_many(batches: int) -> None:
    """Add ``batches`` batches to the tally (which restarts if the masses changed)."""
    ss = st.session_state
    leaf_masses = tree_demo.masses(ss["tree.priorities"], ss["tree.alpha"])
    ss["tree.tally"] = tree_demo.accumulate(
        ss["tree.tally"], leaf_masses, ss["tree.batch"], batches, ss["tree.rng"]
    )


def clear_draws() -> None:
    """Forget every draw and restart the generator from its seed."""
    st.session_state["tree.uniforms"] = st.session_state["tree.tally"] = None
    st.session_state["tree.rng"] = np.random.default_rng(TREE_SEED)


def shown_batch(tree: SumTree) -> tree_demo.BatchDraw | None:
    """The last batch's descents in `tree` (the masses as they are now); None before the first
    draw, or once the batch size changed since."""
    uniforms = st.session_state["tree.uniforms"]
    if uniforms is None or len(uniforms) != st.session_state["tree.batch"]:
        return None
    return tree_demo.draw_batch(tree, uniforms)


def drawn_counts(leaf_masses: np.ndarray) -> tuple[np.ndarray, bool]:
    """How often each leaf has been drawn from `leaf_masses`, and whether the draws before were
    from other masses (the priorities or α changed since: the counts start again)."""
    tally = st.session_state["tree.tally"]
    if tally is not None and tally.matches(leaf_masses):
        return np.asarray(tally.counts), False
    return np.zeros(len(leaf_masses), np.int64), tally is not None
