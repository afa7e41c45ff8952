"""Sum tree: how proportional PER stores priorities and draws a stratified batch, for a class."""

import streamlit as st

from rdqn.classroom import tree_demo as td
from rdqn.dashboard import tree_state
from rdqn.dashboard.assets import explanation
from rdqn.dashboard.display import show_chart
from rdqn.dashboard.state import ensure_app_frame
from rdqn.dashboard.tree_view import batch_queries, leaf_table, live_tree, priority_editor
from rdqn.figures import draw_histogram_figure, segments_figure, sum_tree_figure

ensure_app_frame()

LEAF_COUNTS = (8, 12, 16, 32, 64)
BATCHES_PER_CLICK = 100
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
    priority_editor(n)
table = td.leaf_table(ss["tree.priorities"], ss["tree.alpha"], ss["tree.beta"])
with table_col:
    leaf_table(table)
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
batch_queries(batch)
counts, restarted = tree_state.drawn_counts(leaf_masses)
show_chart(
    st, draw_histogram_figure(counts, leaf_masses, batch_size=ss["tree.batch"]), width="stretch"
)
if restarted:
    st.caption("The priorities or α changed since the last draws: the histogram restarts.")

st.divider()
st.subheader("The live run's tree")


live_tree()
