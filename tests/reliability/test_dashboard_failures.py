"""The dashboard tells the truth when things fail (issue 11, "failures are shown, never hidden").

Honest status: every page shows a run's real state, from its handle (which knows at once) or
its record, never only the last snapshot's: a run whose trainer fails mid-run (here: the disk
fills up) reads 'failed' with its error on the live page, Saved runs and Compare; a run the
admin stopped reads 'stopped' with the reason on its owner's page; a queued run stopped before
it started reads 'stopped', not "preparing to train".

Error pages: a run store that cannot be used (garbage, truncated, a folder) is one message on
every page naming the path and what to do, never a traceback; Streamlit shows no error details
(`.streamlit/config.toml`, checked here with the rest of its hardening).
"""

from __future__ import annotations

import sqlite3
import tomllib
from pathlib import Path

import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from dashboard.state import registry
from rdqn.runs.store import RunStore
from rdqn.training.trainer import Trainer
from tests.app.conftest import isolated_app  # noqa: F401 - autouse: private RDQN_HOME
from tests.run_helpers import tiny, wait_for

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TINY = {
    "train.total_steps": 1_000,
    "train.learning_starts": 32,
    "replay.capacity": 256,
    "replay.batch_size": 16,
}
FULL_DISK = "[Errno 28] No space left on device"


def open_page(page: str, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query)
    at.run()
    at.switch_page(page).run()
    assert not at.exception
    return at


def shown(at: AppTest) -> str:
    """The page's progress line, messages and captions, as one text."""
    parts = [element.proto.text for element in at.get("progress")]
    for kind in (at.error, at.warning, at.info, at.caption):
        parts.extend(element.value for element in kind)
    return "\n".join(parts).replace("\\", "")


@pytest.fixture
def disk_fills_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every trainer fails at its 100th step as a full disk would."""
    step = Trainer.step

    def failing_step(self: Trainer) -> None:
        if self.env_steps >= 100:
            raise OSError(28, "No space left on device")
        step(self)

    monkeypatch.setattr(Trainer, "step", failing_step)


def test_a_run_that_fails_mid_run_reads_failed_with_its_error_on_every_page(
    disk_fills_up: None,
) -> None:
    at = open_page("pages/live.py")
    at.session_state["live.overrides"] = TINY
    at.button(key="live.start").click().run()
    handle = registry().get(at.session_state["live.run_id"])
    assert handle.join(30) and handle.status == "failed"
    at.run()
    assert not at.exception
    text = shown(at)
    assert text.startswith("failed · run") and "100 of 1,000 steps" in text
    assert f"The run failed: OSError: {FULL_DISK}" in text
    assert "running" not in text

    at.switch_page("pages/runs.py").run()
    assert at.dataframe[0].value["status"].tolist() == ["failed"]
    at.session_state[at.dataframe[0].key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert FULL_DISK in shown(at)

    group = registry().enqueue([tiny(1_000)], group_id="fullgroup1")[0]
    assert group.join(30)
    compare = open_page("pages/compare.py", group="fullgroup1")
    status = next(f.value for f in compare.dataframe if "progress" in f.value.columns)
    assert status["status"].tolist() == ["failed"]
    assert FULL_DISK in status["error"].iloc[0]


def test_a_run_the_admin_stopped_reads_stopped_with_the_reason_on_its_owners_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = open_page("pages/live.py")
    at.session_state["live.overrides"] = {**TINY, "train.total_steps": 1_000_000}
    at.session_state["live.speed"] = "100 steps/s"
    at.button(key="live.start").click().run()
    handle = registry().get(at.session_state["live.run_id"])
    wait_for(lambda: handle.snapshot() is not None and handle.snapshot().env_steps > 0)
    at.run()
    assert shown(at).startswith("running")
    registry().stop(handle.id, reason="stopped: by the server's admin")  # no owner: the admin
    at.run()
    text = shown(at)
    assert text.startswith("stopped · run")
    assert "The run stopped: by the server's admin. Press **Resume**" in text
    assert "running" not in text


def test_a_queued_run_stopped_before_it_started_reads_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RDQN_MAX_RUNS", "1")
    registry().start(tiny(1_000_000), owner="someone-else", speed=5.0)  # takes the one slot
    at = open_page("pages/live.py")
    at.button(key="live.start").click().run()
    mine = registry().get(at.session_state["live.run_id"])
    assert mine.status == "created" and "waits in the queue" in shown(at)
    registry().stop(mine.id, reason="stopped: by the server's admin")
    at.run()
    text = shown(at)
    assert "The run stopped: by the server's admin." in text
    assert "preparing" not in text and "queue" not in text
    assert RunStore().get_run(mine.id).status == "stopped"


# ------------------------------------------------------------------ a store that cannot be used
STORE_PAGES = ["pages/live.py", "pages/compare.py", "pages/runs.py"]
DAMAGED = {
    "garbage": lambda db: db.write_bytes(b"this is not a database\n" * 200),
    "truncated": lambda db: db.write_bytes(b"SQLite format 3\x00" + b"\x00" * 84),
    "a folder": lambda db: db.mkdir(),
}


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_a_damaged_store_is_one_clear_message_on_every_page(tmp_path: Path, damage: str) -> None:
    """Reproduced on the old main: every page showed a traceback with the server's paths.

    In a browser the app frame (app.py) opens the store on every page run; AppTest runs the
    frame only on its first run, so the pages are then checked on their own (those that read
    runs; the frame covers the rest)."""
    DAMAGED[damage](tmp_path / "rdqn.db")
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert_store_message(at, str(tmp_path))
    at.session_state["app.frame"] = True
    for page in STORE_PAGES:
        at.switch_page(page).run()
        assert_store_message(at, str(tmp_path))


def assert_store_message(at: AppTest, home: str) -> None:
    assert not at.exception, at.exception
    (error,) = at.error
    message = error.value.replace("\\", "")
    assert message.startswith("The run store cannot be used:"), message
    assert home in message and "RDQN_HOME" in message, message
    assert "Traceback" not in message and 'File "' not in message


def test_a_store_error_in_the_middle_of_a_page_is_the_same_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken(name: str) -> str:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr("dashboard.assets.explanation", broken)  # the home page's text
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert_store_message(at, str(tmp_path))
    assert "database disk image is malformed" in at.error[0].value


def test_the_server_config_is_hardened() -> None:
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    server, client = config["server"], config["client"]
    assert client["showErrorDetails"] == "none"  # no traceback, no server paths, no types
    assert server["enableXsrfProtection"] is True
    assert server["fileWatcherType"] == "none"
    assert 1 <= server["maxUploadSize"] <= 5  # MB: a prices CSV
    option = st_config._config_options_template["client.showErrorDetails"]
    assert '"none"' in option.description  # a value this Streamlit accepts
