"""One update by hand: targets, TD errors, losses, probabilities, IS weights and new priorities."""

import streamlit as st

import rdqn.figures as figures
from rdqn.classroom import worked_example as we
from rdqn.dashboard.by_hand_table import transition_columns
from rdqn.dashboard.display import show_chart
from rdqn.dashboard.memories_panel import chosen, memory_section
from rdqn.dashboard.state import ensure_app_frame
from rdqn.dashboard.text import plain

ensure_app_frame()

ss = st.session_state


def reset() -> None:
    ss["hand.base"] = we.example_frame(we.default_example())
    ss["hand.editor"] += 1  # a fresh editor forgets the edits made on the old table


DECIMALS = "%.3f"  # every number in this page's tables, and the loss

st.title("One update by hand")
if (memory := chosen()) is not None:
    memory_section(memory)
st.caption(
    "Four transitions form a mini-batch (B = 4), and here also the whole buffer (N = 4): N is "
    "the number of stored transitions in P(i) and the IS weights, B the number of rows the loss "
    "averages over. Edit any cell or move a slider and follow one prioritized DQN update "
    "through every step (Schaul et al. 2015, Algorithm 1)."
)

inputs, params = st.columns([5, 2], gap="large")
with inputs:
    st.markdown("**The transitions** (their current priorities set how they were drawn)")
    edited = st.data_editor(
        ss["hand.base"],
        key=f"hand.editor_{ss['hand.editor']}",
        column_config=transition_columns(DECIMALS),
        num_rows="fixed",
        width="stretch",
    )
    st.button("Reset the table", key="hand.reset", icon=":material/restart_alt:", on_click=reset)
with params:
    default = we.default_example()
    gamma = st.slider(
        "γ (discount)", 0.0, 1.0, default.gamma, 0.01, key="hand.gamma", persist_state="session"
    )
    alpha = st.slider(
        "α (prioritization)",
        0.0,
        1.0,
        default.alpha,
        0.05,
        key="hand.alpha",
        persist_state="session",
    )
    beta = st.slider(
        "β (IS correction)", 0.0, 1.0, default.beta, 0.05, key="hand.beta", persist_state="session"
    )
    eps = st.slider(
        "ε (added to |δ|)",
        0.0,
        0.1,
        default.eps,
        0.005,
        format="%.3f",
        key="hand.eps",
        persist_state="session",
    )
    loss = st.radio(
        "Per-sample loss", we.LOSSES, horizontal=True, key="hand.loss", persist_state="session"
    )

try:
    example = we.example_from_frame(edited, gamma=gamma, alpha=alpha, beta=beta, eps=eps, loss=loss)
except ValueError as err:
    st.error(f"Cannot compute the update: {plain(err)}.", icon=":material/error:")
    st.stop()
result = we.worked_update(example)

st.subheader("Step by step")
columns = {  # short header (the table must fit 1280 px with the sidebar open), tooltip
    "target": ("yᵢ", "TD target"),
    "td_error": ("δᵢ", "TD error yᵢ − Q(sᵢ, aᵢ)"),
    "loss": ("L(δᵢ)", "Per-sample loss"),
    "probability": ("P(i)", "Sampling probability under the current priorities"),
    "weight": ("wᵢ", "Importance-sampling weight"),
    "weighted_loss": ("wᵢ·Lᵢ", "Weighted loss: what the batch mean adds up"),
    "new_priority": ("new pᵢ", "New priority |δᵢ| + ε"),
    "new_mass": ("new pᵢ^α", "New mass in the sum tree"),
    "new_probability": ("next P(i)", "Sampling probability at the next draw"),
}
st.dataframe(
    result.table,
    column_config={
        name: st.column_config.NumberColumn(label, help=help_, format=DECIMALS)
        for name, (label, help_) in columns.items()
    },
    width="stretch",
)
loss_col, chart_col = st.columns([1, 2], gap="large")
with loss_col:
    st.metric("Loss = (1/B) Σ wᵢ·Lᵢ", DECIMALS % result.loss)
    st.caption(
        "P(i) and the IS weights come from the *current* priorities, the ones the batch was "
        "drawn with; the new priorities |δᵢ| + ε only change the next draw (next P(i))."
    )
with chart_col:
    show_chart(
        st,
        figures.probability_weight_bars(
            result.table["probability"].to_numpy(), result.table["weight"].to_numpy()
        ),
        width="stretch",
        height=320,
    )

st.subheader("The arithmetic for one row")
st.caption("dᵢ = 1 when sᵢ′ is terminal (the ticked dᵢ column), else 0.")
row = st.segmented_control(
    "Row",
    list(range(1, example.rows + 1)),
    default=2,
    required=True,
    format_func=lambda i: f"row {i}",
    key="hand.row",
    persist_state="session",
)
cells = st.columns(2, gap="large")
for k, step in enumerate(we.step_equations(example, result, row)):
    with cells[k % 2]:
        st.markdown(f"**{k + 1}. {step.name}**")
        st.latex(step.formula)
        st.latex(step.numbers)
