"""Sweeps: watch or start a grid of runs, and read its results as a heatmap."""

import streamlit as st

from dashboard.state import ensure_app_frame

ensure_app_frame()

st.title("Sweeps")
