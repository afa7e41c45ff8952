""" "Memories replayed" on Replay internals, and the memory it carries to "One update by hand".

The panel asks the run for its memory view (`RunHandle.request_memories`: at most one under way
or fresh, however many pages poll) and shows what the run sent last: a list of memories as small
pictures with their numbers, where in the env the surprising ones are, and how often memories of
each age were replayed against uniform replay. Clicking a row opens One update by hand with that
memory (`BY_HAND_MEMORY`). A run that replays R2D2's sequences shows its sequences instead: their
numbers, and their steps coloured by |δ_t| (`sequences_section`).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rdqn.dashboard.display import show_chart
from rdqn.dashboard.fragments import fragment
from rdqn.dashboard.memories_view import (
    LIST_NAMES,
    ChosenMemory,
    chosen_memory,
    memory_steps,
    memory_table,
    sequence_table,
)
from rdqn.dashboard.state import registry
from rdqn.figures.memories import replays_by_age_figure, sequence_steps_figure, surprise_figure
from rdqn.training.memory_view import SequenceMemories

__all__ = [
    "BY_HAND_MEMORY",
    "MEMORIES_REFRESH_S",
    "chosen",
    "memories_panel",
    "memory_section",
]

MEMORIES_REFRESH_S = 2.0
FIRST_WAIT_S = 2.0
"""How long the panel's first draw waits for the run's first memory view."""
BY_HAND_MEMORY = "hand.memory"
"""Session state: the `ChosenMemory` One update by hand shows (None: its worked example)."""
CHART_HEIGHT = 380
_DECIMALS = "%.4g"


def _columns() -> dict[str, object]:
    number = st.column_config.NumberColumn
    return {
        "memory": st.column_config.ImageColumn("memory", help="The stored state, the action taken"),
        "slot": number("slot", help="Its place in the replay memory", format="%d"),
        "action": st.column_config.TextColumn("action"),
        "reward": number("r", help="Reward", format=_DECIMALS),
        "terminal": st.column_config.CheckboxColumn("end", help="The episode ended here"),
        "td_abs": number("|δ| now", help="|TD error| by the current networks", format=_DECIMALS),
        "priority": number(
            "p stored",
            help="The priority it is drawn by: |δ| + ε from its last replay (the largest so far "
            "if never replayed); none under uniform replay",
            format=_DECIMALS,
        ),
        "probability": number("P(i)", help="Chance to be drawn now", format=_DECIMALS),
        "weight": number("wᵢ", help="IS weight at the current β", format=_DECIMALS),
        "age": number("age", help="Transitions stored since (0: the newest)", format="%d"),
        "replayed": number("replayed", help="Times it was in a batch", format="%d"),
    }


@fragment(run_every=MEMORIES_REFRESH_S)
def memories_panel(run_id: str) -> None:
    """The panel for run ``run_id``."""
    st.subheader("Memories replayed")
    handle = registry().get(run_id)
    if handle is None:
        st.caption("The replay memory is shown while its run is on this server.")
        return
    handle.request_memories()
    view = handle.first_memories(FIRST_WAIT_S)
    if view is None:
        st.caption("Asking the run for its replay memory…")
        return
    if isinstance(view, SequenceMemories):
        sequences_section(view)
        return
    st.caption(
        f"{view.size:,} memories stored (of {view.capacity:,}) at step {view.env_steps:,} · "
        f"{view.scheme} replay · β {view.beta:.2f}. The charts draw {len(view.drawn):,} of them; "
        "every number is the run's own. Click a row to work its update by hand."
    )
    chosen = _list_chooser("Memories", view.lists, "internals.memory_list")
    event = st.dataframe(
        memory_table(view, chosen),
        column_config=_columns(),
        hide_index=True,
        width="stretch",
        row_height=52,
        on_select="rerun",
        selection_mode="single-row",
        key=f"internals.memories_{view.env_steps}_{chosen}",
    )
    if event.selection.rows:
        st.session_state[BY_HAND_MEMORY] = chosen_memory(
            view, run_id, chosen, event.selection.rows[0]
        )
        st.switch_page("pages/by_hand.py")
    left, right = st.columns(2)
    show_chart(left, surprise_figure(view), height=CHART_HEIGHT, width="stretch")
    left.caption(
        "**What to look for:** the highest priorities gather where the learner is most wrong, "
        "on CartPole near the angles and positions where the pole falls."
    )
    show_chart(right, replays_by_age_figure(view), height=CHART_HEIGHT, width="stretch")
    right.caption(
        "**What to look for:** uniform replay replays each memory about as often as the dashed "
        "line; prioritized replay replays a few surprising memories far more."
    )


def _list_chooser(label: str, lists: dict[str, object], key: str) -> str:
    """Which of the view's ``lists`` (in `LIST_NAMES` order) the table shows."""
    names = [name for name in LIST_NAMES if name in lists]
    return st.segmented_control(
        label,
        names,
        format_func=LIST_NAMES.get,
        default=names[0],
        required=True,
        key=key,
        label_visibility="collapsed",
    )


def _sequence_columns() -> dict[str, object]:
    number, shared = st.column_config.NumberColumn, _columns()
    return {
        "slot": number("slot", help="Its place among the stored sequences", format="%d"),
        "steps": number("steps", help="Its steps l (an episode's last may be short)", format="%d"),
        "first": st.column_config.CheckboxColumn("first", help="It begins its episode"),
        "burn_in": number(
            "burn-in",
            help="Steps that only bring the LSTM state up to date, without loss (none where "
            "the sequence begins its episode)",
            format="%d",
        ),
        "td_abs": number(
            "|δ| now",
            help="η max |δₜ| + (1 − η) mean |δₜ| over its learned steps, by the current networks",
            format=_DECIMALS,
        ),
        "priority": number(
            "p stored",
            help="The priority it is drawn by: its mixed |δ| + ε from its last replay (the "
            "largest so far if never replayed); none under uniform replay",
            format=_DECIMALS,
        ),
        **{name: shared[name] for name in ("probability", "weight")},
        "age": number("age", help="Steps stored since its last step (0: the newest)", format="%d"),
    }


def sequences_section(view: SequenceMemories) -> None:
    """Sequence replay's memories: a list of stored sequences with their numbers, and their
    steps' |δ_t| as a heatmap."""
    start = "its stored LSTM state" if view.stored_state else "a zero state"
    burn = (
        f"its first {view.burn_in} steps a burn-in without loss"
        if view.burn_in
        else "every step learned from"
    )
    st.caption(
        f"{view.size:,} sequences of up to {view.sequence_length} steps stored (overlapping by "
        f"{view.overlap}; {view.steps:,} of {view.capacity:,} steps) at step "
        f"{view.env_steps:,} · {view.scheme} replay · β {view.beta:.2f}. Each is replayed from "
        f"{start}, {burn}; its priority mixes its steps' |δ| as η max + (1 − η) mean, "
        f"η {view.eta:g}. Every number is the run's own."
    )
    chosen = _list_chooser("Sequences", view.lists, "internals.sequence_list")
    st.dataframe(
        sequence_table(view, chosen),
        column_config=_sequence_columns(),
        hide_index=True,
        width="stretch",
        key=f"internals.sequences_{view.env_steps}_{chosen}",
    )
    show_chart(
        st,
        sequence_steps_figure(
            view.lists[chosen], title="Each sequence's steps: |δₜ| by the current networks"
        ),
        height=CHART_HEIGHT,
        width="stretch",
    )
    st.caption(
        "**What to look for:** blank cells are the burn-in and the padding after a short "
        "sequence, which have no loss. The largest errors often sit on the step where an "
        "episode ended; with η near 1 that one step lifts its whole sequence to the top by "
        "priority, however well the others are learned."
    )


def chosen() -> ChosenMemory | None:
    """The memory One update by hand shows, if one was clicked."""
    return st.session_state.get(BY_HAND_MEMORY)


def memory_section(memory: ChosenMemory) -> None:
    """One update by hand's section for a memory clicked in the explorer: its picture, its
    numbers and the update's steps with them (`memory_steps`); "Back to the worked example"."""
    box = st.container(border=True, key="hand_memory")
    picture, about = box.columns([1, 5], vertical_alignment="center")
    picture.image(memory.picture, width=96)
    about.markdown(
        f"**A memory from run `{memory.run_id}`**: slot {memory.slot:,}, from "
        f"{LIST_NAMES[memory.list_name].lower()} at step {memory.env_steps:,}. The numbers are "
        "the run's own: the target and TD error by its current networks, P(i) and wᵢ under "
        "its current priorities."
    )
    box.dataframe(
        pd.DataFrame(
            {
                "rᵢ": [memory.reward],
                "dᵢ": [memory.terminated],
                "Q(sᵢ,aᵢ)": [memory.q_taken],
                "Q′(s′ᵢ,a*)": [memory.next_value],
                "yᵢ": [memory.target],
                "δᵢ": [memory.td_error],
                "pᵢ stored": [memory.stored_priority],
                "P(i)": [memory.probability],
                "wᵢ": [memory.weight],
                "new pᵢ": [memory.new_priority],
            }
        ),
        hide_index=True,
        width="stretch",
        column_config={"dᵢ": st.column_config.CheckboxColumn("dᵢ")},
    )
    for k, step in enumerate(memory_steps(memory)):  # one a line: the numbers are long
        box.markdown(f"**{k + 1}. {step.name}**")
        box.latex(step.formula)
        box.latex(step.numbers)
    if box.button("Back to the worked example", key="hand.forget_memory"):
        st.session_state[BY_HAND_MEMORY] = None
        st.rerun()
