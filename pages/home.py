"""Home: what replay and prioritized replay are, and a one-click demo."""

import streamlit as st

from dashboard.params import LIVE_DEFAULTS, config_from_settings
from dashboard.state import ensure_app_frame, start_live_run

ensure_app_frame()

st.title("Prioritized experience replay, live")
st.markdown(
    """
A deep Q-learning agent learns from a **replay memory**: every step it stores a transition
$(s_t, a_t, r_t, s_{t+1})$ and later trains on random mini-batches of old transitions. Each update
moves $Q(s, a)$ toward the target $y = r + \\gamma \\max_{a'} Q_{\\text{target}}(s', a')$ and the
surprise of a transition is its **TD error** $\\delta = y - Q(s, a)$.

**Prioritized replay** (Schaul et al. 2015) replays surprising transitions more often. Each stored
transition gets a priority $p_i = |\\delta_i| + \\epsilon$ and is drawn with probability
"""
)
st.latex(r"P(i) = \frac{p_i^{\alpha}}{\sum_k p_k^{\alpha}}")
st.markdown(
    """
$\\alpha = 0$ is plain uniform replay, $\\alpha = 1$ is fully proportional. Drawing some transitions
more often biases the updates, so each sampled transition's loss is multiplied by an
**importance-sampling weight**
"""
)
st.latex(r"w_i = \frac{\left(N \cdot P(i)\right)^{-\beta}}{\max_j w_j}")
st.markdown(
    """
with $\\beta$ annealed to 1 (full correction) by the end of training. A **sum tree** finds a
transition of any cumulative priority in $O(\\log N)$, so sampling stays fast for a million items.
"""
)

left, right = st.columns([1, 2])
if left.button("Start demo", icon=":material/rocket_launch:", type="primary", key="home.demo"):
    st.session_state["live.settings"] = dict(LIVE_DEFAULTS)
    if start_live_run(config_from_settings(LIVE_DEFAULTS)) is not None:
        st.switch_page("pages/live.py")
right.markdown(
    "The demo trains the PER notebook's agent on CartPole with α = 0.6 and β₀ = 0.4. "
    "Move α and β on the **Live training** page and watch the curve change."
)

st.subheader("Where to go next")
cols = st.columns(3)
cols[0].page_link("pages/internals.py", label="Replay internals", icon=":material/insights:")
cols[0].caption("Who gets replayed, with which weights, and how that changes.")
cols[1].page_link("pages/sum_tree.py", label="Sum tree", icon=":material/account_tree:")
cols[1].caption("Draw a batch by hand and see the stratified segments.")
cols[2].page_link("pages/by_hand.py", label="One update by hand", icon=":material/calculate:")
cols[2].caption("Targets, TD errors, priorities and weights for four transitions.")
