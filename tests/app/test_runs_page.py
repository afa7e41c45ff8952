"""AppTest of the "Saved runs" page against a private store of two tiny finished runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rdqn.figures import SCHEME_COLORS
from rdqn.presets import preset
from rdqn.runs.store import RunStore
from rdqn.serve.handle import RunHandle

APP = Path(__file__).resolve().parents[2] / "app.py"
TINY = {
    "train.total_steps": 200,
    "train.learning_starts": 32,
    "replay.capacity": 256,
    "replay.batch_size": 16,
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The private RDQN_HOME that tests/app/conftest.py set up for this test."""
    return tmp_path


def finished_runs(home: Path, schemes: tuple[str, ...]) -> list[str]:
    store = RunStore(home / "rdqn.db")
    base = preset("per-notebook").with_overrides(TINY)
    ids = []
    for scheme in schemes:
        handle = RunHandle(base.with_overrides({"replay.scheme": scheme}), store=store)
        assert handle.start().join(timeout=60)
        ids.append(handle.id)
    store.close()
    return ids


def open_page() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.switch_page("pages/runs.py")
    at.run()
    assert not at.exception
    return at


def test_empty_store_points_to_live_training(home: Path) -> None:
    at = open_page()
    assert "No saved runs yet" in at.info[0].value
    assert not at.dataframe


def test_table_card_downloads_and_delete(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RDQN_ADMIN_TOKEN", "teacher-token-2026")
    uniform, proportional = finished_runs(home, ("uniform", "proportional"))
    at = open_page()
    table = at.dataframe[0]
    assert table.value["id"].tolist() == [proportional, uniform]  # newest first
    assert set(table.value["status"]) == {"finished"}
    assert table.value["run"].tolist() == [
        f"proportional · α 0.6 · β₀ 0.4 · seed 0 · {proportional[:6]}",
        f"uniform · seed 0 · {uniform[:6]}",
    ]

    at.session_state[table.key] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    at.run()
    assert not at.exception
    assert at.session_state["runs.selected"] == [uniform]
    assert f"uniform · seed 0 · {uniform[:6]}" in [header.value for header in at.subheader]
    (card,) = [c.value for c in at.caption if uniform in c.value]  # the full id
    shown = card.replace("\\", "")  # the markdown escapes of plain()
    assert shown == f"{uniform} · finished · per-notebook · CartPole-v1 · single run"  # no repeats
    manifest = next(t.value for t in at.table if "item" in t.value.columns)
    assert list(manifest.columns) == ["item", "value"] and "seed" in manifest["item"].tolist()
    assert at.json[0].value  # the config
    assert {button.label for button in at.download_button} == {
        "Episodes (CSV)",
        "Updates (CSV)",
        "Evaluations (CSV)",
    }
    delete = at.button(key="runs.delete")
    assert delete.disabled
    # Runs the command line recorded are nobody's: only the admin may delete them.
    assert at.checkbox(key=f"runs.sure.{uniform}").disabled
    at.text_input(key="app.admin_input").input("teacher-token-2026").run()

    at.checkbox(key=f"runs.sure.{uniform}").check().run()
    at.button(key="runs.delete").click().run()
    assert not at.exception
    assert RunStore(home / "rdqn.db").list_runs()["id"].tolist() == [proportional]
    assert at.dataframe[0].value["id"].tolist() == [proportional]
    assert at.session_state["runs.selected"] == []


def test_overlay_of_two_runs_offers_a_card_picker(home: Path) -> None:
    finished_runs(home, ("uniform", "rank"))
    at = open_page()
    at.session_state[at.dataframe[0].key] = {"selection": {"rows": [0, 1]}}
    at.run()
    assert not at.exception
    assert len(at.session_state["runs.selected"]) == 2
    labels = at.dataframe[0].value["run"].tolist()
    assert at.selectbox(key="runs.card").options == labels
    overlay = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [trace["name"] for trace in overlay["data"]] == labels
    assert [trace["line"]["color"] for trace in overlay["data"]] == [
        SCHEME_COLORS["rank"],
        SCHEME_COLORS["uniform"],
    ]
    assert at.json


def test_the_status_filter_hides_stopped_runs(home: Path) -> None:
    """A class that moved sliders leaves a stopped run per nudge: the "Show" pills hide them."""
    uniform, proportional = finished_runs(home, ("uniform", "proportional"))
    store = RunStore(home / "rdqn.db")
    store.set_status(uniform, "stopped")
    store.close()
    at = open_page()
    (pills,) = [widget for widget in at.button_group if widget.label == "Show"]
    assert sorted(pills.options) == ["finished (1)", "stopped (1)"]  # each with its count
    assert sorted(pills.value) == ["finished", "stopped"]  # both shown at first
    assert sorted(at.dataframe[0].value["id"]) == sorted([uniform, proportional])

    pills.set_value(["finished"]).run()
    assert not at.exception
    assert at.dataframe[0].value["id"].tolist() == [proportional]

    at.switch_page("pages/live.py").run()
    at.switch_page("pages/runs.py").run()
    assert not at.exception
    assert at.dataframe[0].value["id"].tolist() == [proportional]  # the filter is kept

    (pills,) = [widget for widget in at.button_group if widget.label == "Show"]
    pills.set_value([]).run()
    assert not at.dataframe
    assert "No run has the statuses chosen above." in [c.value for c in at.caption]


def test_a_run_whose_status_changes_stays_listed(home: Path) -> None:
    """A student's Runs page lists the teacher's run while it is 'created'; when it starts
    ('running'), a rerun still lists it: only a status the viewer deselected is hidden (the
    page once showed "No run has the statuses chosen above")."""
    (run,) = finished_runs(home, ("uniform",))
    store = RunStore(home / "rdqn.db")
    store.set_status(run, "created")
    at = open_page()
    assert at.dataframe[0].value["id"].tolist() == [run]
    store.set_status(run, "running")
    store.close()
    at.run()
    assert not at.exception
    assert at.dataframe[0].value["id"].tolist() == [run]
    (pills,) = [widget for widget in at.button_group if widget.label == "Show"]
    assert pills.value == ["running"]

    pills.set_value([]).run()  # the viewer hides "running"
    assert not at.dataframe


def test_the_table_says_why_each_run_stopped(home: Path) -> None:
    """Beside the status: a stopped run's recorded reason (without its 'stopped: '), a failed
    run's error, 'no reason recorded' for a stop a store from before reasons kept none."""
    replaced, silent, failed, finished = finished_runs(
        home, ("uniform", "proportional", "rank", "uniform")
    )
    store = RunStore(home / "rdqn.db")
    store.set_status(replaced, "stopped", "stopped: replaced by run 3f2a9c01 (α 0.8)")
    store.set_status(silent, "stopped")
    store.set_status(failed, "failed", "non-finite TD error at update 12")
    store.close()
    at = open_page()
    table = at.dataframe[0].value.set_index("id")
    columns = table.columns.tolist()
    assert columns[columns.index("status") + 1] == "why it stopped"
    assert table.loc[replaced, "why it stopped"] == "replaced by run 3f2a9c01 (α 0.8)"
    assert table.loc[silent, "why it stopped"] == "no reason recorded"
    assert table.loc[failed, "why it stopped"] == "non-finite TD error at update 12"
    assert table.loc[finished, "why it stopped"] == ""
