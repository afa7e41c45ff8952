"""Moved to `harness.streamlit_client`, which the tests share; kept for the benchmarks' imports."""

from harness.streamlit_client import Run, StreamlitClient, owner_token

__all__ = ["Run", "StreamlitClient", "owner_token"]
