"""AppTest isolation: a private RDQN_HOME per test, and no training thread outlives its test."""

from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st


@pytest.fixture(autouse=True)
def isolated_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("RDQN_HOME", str(tmp_path))
    st.cache_resource.clear()
    yield
    from dashboard.state import registry

    registry().shutdown()
    st.cache_resource.clear()
