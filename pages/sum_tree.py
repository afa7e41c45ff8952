"""Sum tree: how proportional PER stores priorities and draws a stratified batch, for a class."""

import pandas as pd
import streamlit as st

from dashboard import tree_state
from dashboard.assets import explanation
from dashboard.display import show_chart
from dashboard.figures import (
    draw_histogram_figure,
    segments_figure,
    sum_tree_figure,
    tree_levels_figure,
)
from dashboard.live_tree_notes import no_tree_note, tree_note
from dashboard.state import ensure_app_frame, latest_snapshot
from dashboard.text import plain
from rdqn.classroom import tree_demo as td

ensure_app_frame()

LEAF_COUNTS = (8, 12, 16, 32, 64)
BATCHES_PER_CLICK = 100
DECIMALS = "%.3f"  # every number in this page's tables, editable ones included
ss = st.session_state

st.title("Sum tree")
st.caption(
    "Proportional prioritized replay keeps one mass per stored transition in a sum tree: every "
    "node holds the sum of its children, so the root is the total and a batch is found by "
    "descending from the root. Edit the priorities, move α and β, and draw."
)

controls = st.columns(4, gap="large")
controls[0].selectbox(
    "Leaves (buffer size N)",
    LEAF_COUNTS,
    key="tree.leaves",
    on_change=lambda: tree_state.set_priorities(td.default_priorities(ss["tree.leaves"])),
    persist_state="session",
)
controls[1].slider(
    "α (prioritization)", 0.0, 1.0, 0.6, step=0.05, key="tree.alpha", persist_state="session"
)
controls[2].slider(
    "β (IS correction)", 0.0, 1.0, 0.4, step=0.05, key="tree.beta", persist_state="session"
)
controls[3].slider("Batch size B", 1, 16, 4, key="tree.batch", persist_state="session")

n = ss["tree.leaves"]
if len(ss["tree.base"]) != n:
    tree_state.set_priorities(td.default_priorities(n))
tree_slot = st.container()
editor_col, table_col = st.columns([1, 2], gap="large")
with editor_col:
    st.markdown("**Priorities** $p_i = |\\delta_i| + \\epsilon$ (edit a cell)")
    edited = st.data_editor(
        pd.DataFrame({"priority": ss["tree.base"]}, index=pd.RangeIndex(n, name="leaf")),
        key=f"tree.editor_{ss['tree.editor']}",
        column_config={
            "priority": st.column_config.NumberColumn("priority pᵢ", step=0.001, format=DECIMALS)
        },
        height=min(36 + 35 * n, 400),
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

table = td.leaf_table(ss["tree.priorities"], ss["tree.alpha"], ss["tree.beta"])
with table_col:
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
        height=min(36 + 35 * n, 400),
        width="stretch",
    )
st.markdown(explanation("sum_tree_reading"))

leaf_masses = table["mass"].to_numpy()
tree = td.build_tree(leaf_masses)
batch = tree_state.shown_batch(tree)
show_chart(
    tree_slot,
    sum_tree_figure(
        leaf_masses,
        paths=batch.paths if batch else None,
        highlight_leaves=batch.leaves.tolist() if batch else None,
        title=f"Sum tree of the masses p<sub>i</sub><sup>α</sup>: total {tree.total:.3g}",
    ),
    width="stretch",
)

st.subheader("Draw a stratified batch")
with st.container(horizontal=True):
    st.button(
        "Draw a batch",
        key="tree.draw",
        type="primary",
        icon=":material/ads_click:",
        on_click=tree_state.draw_batch,
    )
    st.button(
        f"Draw {BATCHES_PER_CLICK} batches",
        key="tree.draw_many",
        icon=":material/bar_chart:",
        on_click=tree_state.draw_many,
        args=(BATCHES_PER_CLICK,),
    )
    st.button(
        "Clear draws", key="tree.clear", icon=":material/delete:", on_click=tree_state.clear_draws
    )
st.markdown(explanation("sum_tree_drawing"))
show_chart(
    st,
    segments_figure(leaf_masses, batch.queries if batch else None, ss["tree.batch"]),
    width="stretch",
)
if batch is None:
    st.info("Press **Draw a batch** to see its queries and the path each one takes.")
else:
    st.markdown("**The queries** and the nodes each descent visits (heap ids, root = 1)")
    st.dataframe(
        batch.frame(),
        column_config={
            name: st.column_config.NumberColumn(format=DECIMALS)
            for name in ("segment from", "segment to", "u", "query")
        },
        width="stretch",
    )
counts, restarted = tree_state.drawn_counts(leaf_masses)
show_chart(
    st, draw_histogram_figure(counts, leaf_masses, batch_size=ss["tree.batch"]), width="stretch"
)
if restarted:
    st.caption("The priorities or α changed since the last draws: the histogram restarts.")

st.divider()
st.subheader("The live run's tree")


@st.fragment(run_every=2.0)
def live_tree() -> None:
    snap = latest_snapshot(ss.get("live.run_id"))
    if snap is None or not snap.tree_levels:
        st.info(no_tree_note(snap), icon=":material/info:")
        st.page_link("pages/live.py", label="Live training", icon=":material/monitoring:")
        return
    show_chart(
        st,
        tree_levels_figure(
            snap.tree_levels,
            capacity=snap.capacity,
            size=snap.buffer_size,
            title=f"Top of the live sum tree: {snap.buffer_size:,} of {snap.capacity:,} slots",
        ),
        width="stretch",
    )
    st.caption(tree_note(snap))


live_tree()
