"""rdqn dashboard: `streamlit run app.py`.

A thin frame: page config, the one state initializer, and navigation over `pages/`.
"""

import sqlite3

import streamlit as st

from dashboard.display import projector_toggle
from dashboard.state import init_state, keep_session_runs_alive, session, store_failed
from rdqn.runs.store import StoreError

st.set_page_config(
    page_title="rdqn · prioritized replay explorer",
    page_icon="assets/favicon.png",
    layout="wide",
)
init_state()  # first: a page the store stops (session() opens it) still finds its keys
session()
keep_session_runs_alive()
st.session_state["app.frame"] = True

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
projector_toggle()
try:
    navigation.run()
except (StoreError, sqlite3.DatabaseError) as err:  # the store failed in the middle of a page
    store_failed(err)
