"""Plotting layer of the rdqn dashboard: pure figure builders, no Streamlit import."""
