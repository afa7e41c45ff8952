"""The Sum tree page's texts on the live run's tree: why a run shows none, and how to read the
top levels of the one it has (`assets/text/sum_tree_live*.md`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rdqn.classroom.tree_demo import tree_leaf_count
from rdqn.dashboard.assets import explanation

if TYPE_CHECKING:
    from rdqn.training.telemetry import Telemetry

__all__ = ["no_tree_note", "tree_note"]


def no_tree_note(snapshot: Telemetry | None) -> str:
    """Why there is no live tree to show: no run in this session yet, or a scheme that keeps
    none (rank-based and uniform replay)."""
    scheme = snapshot.scheme if snapshot is not None else None
    return explanation(f"sum_tree_live_{scheme if scheme in ('rank', 'uniform') else 'none'}")


def tree_note(snapshot: Telemetry) -> str:
    """How the live tree is laid out: its leaves over the memory's slots (a transition or a
    sequence each), and the padding leaves past the last slot and the empty slots, where there
    are any."""
    leaves = tree_leaf_count(snapshot.slots)
    numbers = {
        "leaves": leaves,
        "slots": snapshot.slots,
        "padding": leaves - snapshot.slots,
        "size": snapshot.slots_used,
        "item": snapshot.item,
    }
    parts = ["sum_tree_live"]
    parts += ["sum_tree_live_padding"] if leaves > snapshot.slots else []
    parts += ["sum_tree_live_empty"] if snapshot.slots_used < snapshot.slots else []
    return " ".join(explanation(name).format(**numbers).strip() for name in parts)
