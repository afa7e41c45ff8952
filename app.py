"""rdqn dashboard entry point: `streamlit run app.py`."""

import streamlit as st

st.set_page_config(page_title="rdqn: prioritized replay explorer", layout="wide")
st.title("rdqn")
st.write("Prioritized experience replay for deep Q-learning. The dashboard pages are coming next.")
