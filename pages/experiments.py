"""Experiments: the PER paper's Blind Cliffwalk figure, from its results file."""

import streamlit as st

from rdqn.dashboard.experiments_view import show_cliffwalk
from rdqn.dashboard.state import ensure_app_frame

ensure_app_frame()

st.title("Experiments")
show_cliffwalk()
