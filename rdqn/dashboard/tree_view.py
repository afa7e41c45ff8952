"""The Sum tree page's tables and its view of the live run's tree (layout only; the state is
`rdqn.dashboard.tree_state`, the numbers `rdqn.classroom.tree_demo`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rdqn.classroom import tree_demo as td
from rdqn.dashboard import tree_state
from rdqn.dashboard.display import show_chart
from rdqn.dashboard.fragments import fragment
from rdqn.dashboard.live_run import live_run_id
from rdqn.dashboard.live_tree_notes import no_tree_note, tree_note
from rdqn.dashboard.state import latest_snapshot
from rdqn.dashboard.text import plain
from rdqn.figures import tree_levels_figure

__all__ = ["DECIMALS", "batch_queries", "leaf_table", "live_tree", "priority_editor"]

DECIMALS = "%.3f"
"""Every number in the page's tables, editable ones included."""


def _height(n: int) -> int:
    return min(36 + 35 * n, 400)


def priority_editor(n: int) -> None:
    """The editable priorities of the ``n`` leaves, Randomize and Reset; a bad edit keeps the
    last valid priorities and says why."""
    ss = st.session_state
    st.markdown("**Priorities** $p_i = |\\delta_i| + \\epsilon$ (edit a cell)")
    edited = st.data_editor(
        pd.DataFrame({"priority": ss["tree.base"]}, index=pd.RangeIndex(n, name="leaf")),
        key=f"tree.editor_{ss['tree.editor']}",
        column_config={
            "priority": st.column_config.NumberColumn("priority pᵢ", step=0.001, format=DECIMALS)
        },
        height=_height(n),
        width="stretch",
    )
    try:
        ss["tree.priorities"] = td.check_priorities(edited["priority"]).tolist()
    except ValueError as err:
        st.error(f"{plain(err)}. Using the last valid priorities.", icon=":material/error:")
    with st.container(horizontal=True):
        st.button(
            "Randomize",
            key="tree.randomize",
            icon=":material/casino:",
            on_click=lambda: tree_state.set_priorities(td.random_priorities(n, ss["tree.rng"])),
        )
        st.button(
            "Reset",
            key="tree.reset",
            icon=":material/restart_alt:",
            on_click=lambda: tree_state.set_priorities(td.default_priorities(n)),
        )


def leaf_table(table: pd.DataFrame) -> None:
    """Per leaf: the priority, its mass p^α, P(i) and the IS weight, as bars."""
    st.markdown("**Per leaf:** mass $p_i^\\alpha$, sampling probability $P(i)$, IS weight $w_i$")
    st.dataframe(
        table,
        column_config={
            "priority": st.column_config.NumberColumn("pᵢ", format=DECIMALS),
            "mass": st.column_config.NumberColumn("mass pᵢ^α", format=DECIMALS),
            "probability": st.column_config.ProgressColumn(
                "P(i)",
                format=DECIMALS,
                min_value=0.0,
                max_value=float(table["probability"].max()),
            ),
            "weight": st.column_config.ProgressColumn(
                "IS weight wᵢ", format=DECIMALS, min_value=0.0, max_value=1.0
            ),
        },
        height=_height(len(table)),
        width="stretch",
    )


def batch_queries(batch: td.BatchDraw | None) -> None:
    """The last batch's queries and the nodes each descent visits, or how to draw one."""
    if batch is None:
        st.info("Press **Draw a batch** to see its queries and the path each one takes.")
        return
    st.markdown("**The queries** and the nodes each descent visits (heap ids, root = 1)")
    st.dataframe(
        batch.frame(),
        column_config={
            name: st.column_config.NumberColumn(format=DECIMALS)
            for name in ("segment from", "segment to", "u", "query")
        },
        width="stretch",
    )


@fragment(run_every=2.0)
def live_tree() -> None:
    """The top of the live run's sum tree (this session's live run), every 2 s."""
    snap = latest_snapshot(live_run_id())
    if snap is None or not snap.tree_levels:
        st.info(no_tree_note(snap), icon=":material/info:")
        st.page_link("pages/live.py", label="Live training", icon=":material/monitoring:")
        return
    show_chart(
        st,
        tree_levels_figure(
            snap.tree_levels,
            capacity=snap.slots,
            size=snap.slots_used,
            title=f"Top of the live sum tree: {snap.slots_used:,} of {snap.slots:,} slots",
        ),
        width="stretch",
    )
    st.caption(tree_note(snap))
