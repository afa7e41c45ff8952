# ruff: noqa: E402 (the dashboard is imported after the navigation goes out: see below)
"""rdqn dashboard: `streamlit run app.py`.

A thin frame: page config, navigation over `pages/`, the one state initializer, then the page.

The navigation goes out before the dashboard is imported: a server's first page run spends
several seconds importing it, and until the navigation arrives the browser lists Streamlit's
guess at the pages (the files' names, "app" first) over a blank page.
"""

import sqlite3
import sys
from contextlib import nullcontext

import streamlit as st

st.set_page_config(
    page_title="rdqn · prioritized replay explorer",
    page_icon="assets/favicon.png",
    layout="wide",
)
pages = {
    "Learn": [
        st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
        st.Page("pages/live.py", title="Live training", icon=":material/monitoring:"),
        st.Page("pages/internals.py", title="Replay internals", icon=":material/insights:"),
        st.Page("pages/sum_tree.py", title="Sum tree", icon=":material/account_tree:"),
        st.Page("pages/by_hand.py", title="One update by hand", icon=":material/calculate:"),
    ],
    "Study": [
        st.Page("pages/compare.py", title="Compare schemes", icon=":material/compare_arrows:"),
        st.Page("pages/runs.py", title="Saved runs", icon=":material/history:"),
    ],
}
navigation = st.navigation(pages)

# The server's first page run imports the dashboard (and with it PyTorch, SciPy and the compiled
# replay kernels); later runs find them imported.
first_run = "dashboard.state" not in sys.modules
with (
    st.spinner("Starting the dashboard: loading PyTorch and the replay kernels (once)…")
    if first_run
    else nullcontext()
):
    from dashboard.display import projector_toggle
    from dashboard.state import init_state, keep_session_runs_alive, session, store_failed
    from rdqn.runs.store import StoreError

init_state()  # first: a page the store stops (session() opens it) still finds its keys
session()
keep_session_runs_alive()
st.session_state["app.frame"] = True
projector_toggle()
try:
    navigation.run()
except (StoreError, sqlite3.DatabaseError) as err:  # the store failed in the middle of a page
    store_failed(err)
