"""The "Return threshold" input of the Compare and Sweeps pages: when a run counts as solved."""

from __future__ import annotations

from typing import Any

from rdqn.compare import ROLLING_WINDOW
from rdqn.dashboard.history import stored_threshold

__all__ = ["return_threshold_input"]


def return_threshold_input(box: Any, env_id: str, key: str) -> float | None:
    """A number input in ``box`` (a Streamlit container), defaulting to ``env_id``'s own reward
    threshold (None: no default), with a step and precision that suit its size: goals that pay
    1 (thresholds below 10) move by 0.05, returns in the hundreds by 10."""
    default = stored_threshold(env_id)
    small = default is not None and default < 10
    return box.number_input(
        "Return threshold",
        value=default,
        step=0.05 if small else 10.0,
        format="%.2f" if small else "%.1f",
        key=key,
        help=f"'Solved' when the mean return of the last {ROLLING_WINDOW} episodes reaches it "
        "(default: the environment's own reward threshold; 0.8 where the goal pays 1).",
    )
