"""AppTest of the "Compare schemes" page: its lesson default, a tiny two-scheme comparison run to
the end, queued runs that say why they wait, a reload from the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rdqn.dashboard.assets import explanation
from rdqn.runs.store import RunStore
from tests.run_helpers import wait_for

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


def test_form_defaults_to_the_lesson_that_shows_a_difference(home: Path) -> None:
    at = open_page()
    assert at.selectbox(key="compare.preset").value == "chain-lesson"
    assert at.selectbox(key="compare.env.chain-lesson").value == "rdqn/SparseChain-v0"
    assert at.number_input(key="compare.steps.chain-lesson").value == 4_000
    assert at.number_input(key="compare.seeds").value == 3
    assert at.multiselect(key="compare.schemes").value == ["uniform", "proportional", "rank"]
    assert at.session_state["compare.group"] == []
    (why,) = at.info
    # The asset's text whole; tests/dashboard/test_quoted_figures.py checks its figures.
    assert why.value == explanation("compare_lesson").strip()
    assert "Why this setup shows the difference" in why.value
    assert "Why not CartPole?" in why.value  # and why CartPole would take far longer
    assert "9 runs of 4,000 env steps" in at.caption[1].value


def test_cartpole_says_how_many_steps_it_needs(home: Path) -> None:
    at = open_page()
    at.selectbox(key="compare.preset").set_value("per-notebook").run()
    assert not at.exception
    assert at.selectbox(key="compare.env.per-notebook").value == "CartPole-v1"
    (why,) = at.info
    assert why.value == explanation("compare_cartpole").strip()
    assert why.value.startswith("**CartPole needs ")


@pytest.mark.slow  # trains two runs to their end, the page redrawn meanwhile
def test_tiny_comparison_runs_to_the_end(home: Path) -> None:
    at = open_page()
    at.number_input(key="compare.steps.chain-lesson").set_value(300)
    at.number_input(key="compare.seeds").set_value(1)
    at.multiselect(key="compare.schemes").set_value(["uniform", "proportional"])
    at.button(key="compare.run").click().run()
    assert not at.exception
    run_ids = at.session_state["compare.group"]
    group_id = at.session_state["compare.group_id"]
    assert len(run_ids) == 2
    assert at.query_params["group"] == group_id

    store = RunStore(home / "rdqn.db")

    def finished() -> bool:
        if set(store.list_runs(group_id=group_id)["status"]) == {"finished"}:
            return True
        at.run()  # the page, redrawn as its runs train
        assert not at.exception
        return False

    wait_for(finished, 60, every=1.0)
    runs = store.list_runs(group_id=group_id)
    assert sorted(runs["scheme"]) == ["proportional", "uniform"]
    assert set(runs["status"]) == {"finished"}

    at.run()
    assert not at.exception
    assert at.number_input(key=f"compare.threshold.{group_id}").value == 0.8
    tables = [frame.value for frame in at.dataframe]
    summary = next(t for t in tables if "reached threshold" in t.columns)
    assert summary["scheme"].tolist() == ["uniform", "proportional · α 0.6 · β 0"]
    status = next(t for t in tables if "progress" in t.columns)
    assert set(status["status"]) == {"finished"}
    ids = dict(zip(runs["scheme"], runs["id"], strict=True))
    assert status["run"].tolist() == [
        f"uniform · seed 0 · {ids['uniform'][:6]}",
        f"proportional · α 0.6 · β 0 · seed 0 · {ids['proportional'][:6]}",
    ]
    assert not at.button(key="compare.stop").value


def test_queued_runs_say_why_they_wait(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RDQN_MAX_RUNS", "1")
    at = open_page()
    at.selectbox(key="compare.preset").set_value("per-notebook").run()
    at.number_input(key="compare.seeds").set_value(1)
    at.button(key="compare.run").click().run()
    assert not at.exception
    assert "1 run trains at once on this server" in at.caption[1].value
    status = next(f.value for f in at.dataframe if "progress" in f.value.columns)
    assert status["status"].tolist()[1:] == [
        "waiting, 1st in line (1 run at a time on this server)",
        "waiting, 2nd in line (1 run at a time on this server)",
    ]
    # seed-major: the first run to train is uniform's, then proportional's, then rank's
    assert status["run"].str.split(" ").str[0].tolist() == ["uniform", "proportional", "rank"]


def test_reload_shows_a_finished_group_from_the_store(home: Path) -> None:
    at = open_page()
    at.number_input(key="compare.steps.chain-lesson").set_value(200)
    at.number_input(key="compare.seeds").set_value(1)
    at.multiselect(key="compare.schemes").set_value(["rank"])
    at.button(key="compare.run").click().run()
    group_id = at.session_state["compare.group_id"]
    store = RunStore(home / "rdqn.db")
    wait_for(lambda: set(store.list_runs(group_id=group_id)["status"]) == {"finished"}, 60)

    (run_id,) = store.list_runs(group_id=group_id)["id"]
    rows = [
        {"env_steps": 200, "episode": k, "seed": 10_000 + k, "return": r, "length": 9}
        for k, r in enumerate([3.0, 5.0])
    ]
    store.write_metrics(run_id, evaluations=rows)  # as if it had evaluated its policy

    st.cache_resource.clear()  # a server restart: the registry forgets the run
    fresh = AppTest.from_file(str(APP), default_timeout=60)
    fresh.query_params["group"] = group_id
    fresh.run()
    fresh.switch_page("pages/compare.py").run()
    assert not fresh.exception
    assert fresh.session_state["compare.group_id"] == group_id
    summary = next(f.value for f in fresh.dataframe if "reached threshold" in f.value.columns)
    assert summary["scheme"].tolist() == ["rank · α 0.7 · β 0"]
    specs = [json.loads(chart.proto.spec) for chart in fresh.get("plotly_chart")]
    (evaluation,) = [s for s in specs if s["layout"]["title"]["text"].startswith("Greedy")]
    assert evaluation["data"][-1]["name"] == "rank · α 0.7 · β 0 (1 seed)"
