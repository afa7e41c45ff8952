"""The columns of the One update by hand page's table of transitions: symbols, help, format."""

from __future__ import annotations

from typing import Any

import streamlit as st

__all__ = ["transition_columns"]


def transition_columns(decimals: str) -> dict[str, Any]:
    """Column settings for `st.data_editor` over `rdqn.classroom.worked_example.example_frame`:
    the paper's symbols as headers, what each means as help, numbers with ``decimals``."""
    return {
        "reward": st.column_config.NumberColumn(
            "rᵢ", help="Reward", step=0.1, format=decimals, width="small"
        ),
        "terminated": st.column_config.CheckboxColumn(
            "dᵢ", help="Terminated: sᵢ′ ends the episode (no bootstrap)", width="small"
        ),
        "q": st.column_config.NumberColumn(
            "Q(sᵢ,aᵢ)",
            help="The online network's value of the action taken",
            step=0.1,
            format=decimals,
            width="small",
        ),
        "next_max_q": st.column_config.NumberColumn(
            "max Q′",
            help="max over a′ of Q_target(sᵢ′, a′): the target network's best "
            "value in the next state",
            step=0.1,
            format=decimals,
            width="small",
        ),
        "priority": st.column_config.NumberColumn(
            "pᵢ",
            help="Current priority, the one the batch was drawn with",
            step=0.1,
            format=decimals,
            width="small",
        ),
    }
