"""AppTest isolation: a private RDQN_HOME per test, and no run outlives its test.

The pages are tested with runs in threads (RDQN_EXECUTOR=thread): each test builds a new
registry, and a worker-process executor would warm up a new zygote for each. The executors
themselves are tested in tests/runs/test_executors.py, the default (worker processes) end to
end in tests/e2e.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st


@pytest.fixture(autouse=True)
def isolated_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("RDQN_HOME", str(tmp_path))
    monkeypatch.setenv("RDQN_EXECUTOR", "thread")
    st.cache_resource.clear()
    yield
    from dashboard.state import registry

    registry().shutdown()
    st.cache_resource.clear()
