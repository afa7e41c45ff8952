"""Home: what replay and prioritized replay are, and a one-click demo."""

import streamlit as st

from rdqn.config import RETURN_WINDOW
from rdqn.dashboard.assets import explanation
from rdqn.dashboard.chart_code import load_chart_code
from rdqn.dashboard.live_run import start_live_run, wait_for_first_snapshot
from rdqn.dashboard.live_settings import live_config, use_defaults
from rdqn.dashboard.params import DEMO_PRESET
from rdqn.dashboard.state import ensure_app_frame, registry
from rdqn.presets import preset

ensure_app_frame()

st.title("Prioritized experience replay, live")
st.markdown(explanation("home_replay"))
st.latex(r"P(i) = \frac{p_i^{\alpha}}{\sum_k p_k^{\alpha}}")
st.markdown(explanation("home_weights"))
st.latex(r"w_i = \frac{\left(N \cdot P(i)\right)^{-\beta}}{\max_j w_j}")
st.markdown(explanation("home_sum_tree"))

demo = preset(DEMO_PRESET)
left, right = st.columns([1, 2])
if left.button("Start demo", icon=":material/rocket_launch:", type="primary", key="home.demo"):
    use_defaults(DEMO_PRESET)
    wait_for_first_snapshot(start_live_run(live_config()), registry())
    st.switch_page("pages/live.py")
right.markdown(
    f"The demo trains a DQN agent on CartPole with prioritized replay: proportional, "
    f"α = {demo.replay.alpha:g} and β₀ = {demo.replay.beta0:g} (the **β** counter rises from "
    f"it towards {demo.replay.beta_end:g} as the IS correction grows). Watch the episode return "
    f"climb towards 500, the time limit: the run stops once the mean of {RETURN_WINDOW} "
    f"episodes (the **Return (last {RETURN_WINDOW})** counter) reaches "
    f"{demo.train.stop_at_return:g}, the pole balanced, after about ten seconds of training on "
    "a quiet machine. Then move α or β₀ on the **Live training** page and compare the new curve "
    "with the dashed one."
)

st.subheader("Where to go next")
cols = st.columns(3)
cols[0].page_link("pages/internals.py", label="Replay internals", icon=":material/insights:")
cols[0].caption("Who gets replayed, with which weights, and how that changes.")
cols[1].page_link("pages/sum_tree.py", label="Sum tree", icon=":material/account_tree:")
cols[1].caption("Draw a batch by hand and see the stratified segments.")
cols[2].page_link("pages/by_hand.py", label="One update by hand", icon=":material/calculate:")
cols[2].caption("Targets, TD errors, priorities and weights for four transitions.")

load_chart_code()
