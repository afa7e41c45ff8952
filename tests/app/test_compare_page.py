"""AppTest of the "Compare schemes" page: a tiny two-scheme comparison runs to the end."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rdqn.runs.store import RunStore

APP = Path(__file__).resolve().parents[2] / "app.py"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The private RDQN_HOME that tests/app/conftest.py set up for this test."""
    return tmp_path


def open_page() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.switch_page("pages/compare.py")
    at.run()
    assert not at.exception
    return at


def test_form_defaults(home: Path) -> None:
    at = open_page()
    assert at.selectbox(key="compare.preset").value == "per-notebook"
    assert at.selectbox(key="compare.env.per-notebook").value == "CartPole-v1"
    assert at.number_input(key="compare.steps.per-notebook").value == 15_000
    assert at.multiselect(key="compare.schemes").value == ["uniform", "proportional", "rank"]
    assert at.session_state["compare.group"] == []


def test_tiny_comparison_runs_to_the_end(home: Path) -> None:
    at = open_page()
    at.number_input(key="compare.steps.per-notebook").set_value(300)
    at.number_input(key="compare.seeds").set_value(1)
    at.multiselect(key="compare.schemes").set_value(["uniform", "proportional"])
    at.button(key="compare.run").click().run()
    assert not at.exception
    run_ids = at.session_state["compare.group"]
    group_id = at.session_state["compare.group_id"]
    assert len(run_ids) == 2
    assert at.query_params["group"] == group_id

    store = RunStore(home / "rdqn.db")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = store.list_runs(group_id=group_id)
        if set(runs["status"]) == {"finished"}:
            break
        time.sleep(1.0)
        at.run()
        assert not at.exception
    assert sorted(runs["scheme"]) == ["proportional", "uniform"]
    assert set(runs["status"]) == {"finished"}

    at.run()
    assert not at.exception
    tables = [frame.value for frame in at.dataframe]
    summary = next(t for t in tables if "reached threshold" in t.columns)
    assert summary["scheme"].tolist() == ["uniform", "proportional"]
    status = next(t for t in tables if "progress" in t.columns)
    assert set(status["status"]) == {"finished"}
    assert not at.button(key="compare.stop").value


def test_reload_shows_a_finished_group_from_the_store(home: Path) -> None:
    at = open_page()
    at.number_input(key="compare.steps.per-notebook").set_value(200)
    at.number_input(key="compare.seeds").set_value(1)
    at.multiselect(key="compare.schemes").set_value(["rank"])
    at.button(key="compare.run").click().run()
    group_id = at.session_state["compare.group_id"]
    store = RunStore(home / "rdqn.db")
    deadline = time.monotonic() + 60
    while set(store.list_runs(group_id=group_id)["status"]) != {"finished"}:
        assert time.monotonic() < deadline
        time.sleep(0.5)

    st.cache_resource.clear()  # a server restart: the registry forgets the run
    fresh = AppTest.from_file(str(APP), default_timeout=60)
    fresh.query_params["group"] = group_id
    fresh.run()
    fresh.switch_page("pages/compare.py").run()
    assert not fresh.exception
    assert fresh.session_state["compare.group_id"] == group_id
    summary = next(f.value for f in fresh.dataframe if "reached threshold" in f.value.columns)
    assert summary["scheme"].tolist() == ["rank"]
