"""AppTest isolation: a private RDQN_HOME per test, and no run outlives its test.

The pages are tested on the production path: runs train in worker processes forked from a
zygote (`ProcessExecutor`). Each test builds a new registry, so one executor serves the whole
test process (its zygote warms up once) and only the test session ends it. A test that has to
reach inside a training loop (a patched trainer, an injected failure) runs its runs in threads
instead: mark it ``@pytest.mark.thread_runs``. No browser's grace timer outlives its test: the
sessions released when a test's caches are cleared would set the server's timer thread, whose
release 10 s later pauses an old browser and sets its away timer in whichever test runs then (a
test firing its first timer fired that one). Other test folders take `isolated_app` from here
(`process_executor` is in tests/conftest.py).
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st

from rdqn.serve.executors import ProcessExecutor, ThreadExecutor


@pytest.fixture(autouse=True)
def isolated_app(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    process_executor: ProcessExecutor,
) -> Iterator[None]:
    from rdqn.dashboard import state
    from rdqn.dashboard.classroom import sessions

    monkeypatch.setenv("RDQN_HOME", str(tmp_path))
    in_threads = request.node.get_closest_marker("thread_runs") is not None
    monkeypatch.setattr(
        state, "executor_from_env", ThreadExecutor if in_threads else lambda: process_executor
    )
    monkeypatch.setattr(sessions, "LATER", lambda seconds, then: None)  # a test may set its own
    st.cache_resource.clear()
    yield
    state.registry().shutdown()
    st.cache_resource.clear()
