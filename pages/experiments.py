"""Experiments: the PER paper's Blind Cliffwalk figure, DQN on MinAtar and recurrent replay on
masked CartPole, from their results files."""

import streamlit as st

from rdqn.dashboard.experiments_view import show_cliffwalk, show_study
from rdqn.dashboard.state import ensure_app_frame

ensure_app_frame()

st.title("Experiments")
cliffwalk, minatar, recurrent = st.tabs(["Blind Cliffwalk", "MinAtar", "Recurrent replay"])
with cliffwalk:
    show_cliffwalk()
with minatar:
    show_study("minatar")
with recurrent:
    show_study("recurrent")
