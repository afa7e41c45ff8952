"""The dashboard tells the truth when things fail: failures are shown, never hidden.

Honest status: every page shows a run's real state, from its handle (which knows at once) or
its record, never only the last snapshot's: a run whose trainer fails mid-run (here: the disk
fills up) reads 'failed' with its error on the live page, Saved runs and Compare; a run the
admin stopped reads 'stopped' with the reason on its owner's page; a queued run stopped before
it started reads 'stopped', not "preparing to train".

Error pages: a run store that cannot be used (garbage, truncated, a folder) is one message on
every page naming the path and what to do, never a traceback; Streamlit shows no error details
(`.streamlit/config.toml`, checked here with the rest of its hardening).

Uploads: a prices CSV is checked before it is written (not UTF-8, not a prices CSV, too short:
each says so); after a rejected upload nothing changes and nothing restarts; a file for another
environment is refused, not ignored; the live page says which prices a market run uses; the
uploads folder keeps only the newest files.
"""

from __future__ import annotations

import os
import sqlite3
import tomllib
from pathlib import Path

import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from rdqn.dashboard.saved_runs import STOP_COLUMN
from rdqn.dashboard.state import registry
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


@pytest.mark.thread_runs  # the failure is patched into this process's Trainer
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


@pytest.mark.thread_runs  # the failure is patched into this process's Trainer
@pytest.mark.parametrize("admin", [False, True])
def test_a_runs_error_shows_the_servers_paths_to_the_admin_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, admin: bool
) -> None:
    """Regression: a failed run's error showed every student the server's paths (its checkpoint
    in the run folder, a file elsewhere) on the live page, Saved runs and Compare."""
    step = Trainer.step
    inside, outside = tmp_path / "checkpoints" / "run.pt", "/srv/secret/prices.csv"

    def failing_step(self: Trainer) -> None:
        if self.env_steps >= 100:
            raise OSError(f"cannot write {inside} after reading {outside}")
        step(self)

    monkeypatch.setattr(Trainer, "step", failing_step)
    monkeypatch.setenv("RDQN_ADMIN_TOKEN", "teacher-only-token")
    at = AppTest.from_file(APP, default_timeout=60)
    if admin:
        at.session_state["app.admin_token"] = "teacher-only-token"
    at.run()
    at.switch_page("pages/live.py").run()
    at.session_state["live.overrides"] = TINY
    at.button(key="live.start").click().run()
    handle = registry().get(at.session_state["live.run_id"])
    assert handle.join(30) and handle.status == "failed"
    group = registry().enqueue([tiny(1_000)], group_id="pathgroup1")[0]
    assert group.join(30) and group.status == "failed"
    at.run()
    pages = {"live": shown(at)}
    at.switch_page("pages/runs.py").run()
    pages["saved runs table"] = " ".join(at.dataframe[0].value[STOP_COLUMN].astype(str))
    at.session_state[at.dataframe[0].key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    pages["run card"] = shown(at)
    at.query_params["group"] = "pathgroup1"
    at.switch_page("pages/compare.py").run()
    status = next(f.value for f in at.dataframe if "progress" in f.value.columns)
    pages["compare"] = status["error"].iloc[0]
    for page, text in pages.items():
        assert "cannot write" in text, (page, text)
        if admin:
            assert str(inside) in text and outside in text, (page, text)
        else:
            assert "$RDQN_HOME/checkpoints/run.pt" in text, (page, text)
            assert str(tmp_path) not in text and outside not in text, (page, text)


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


def assert_store_message(at: AppTest, home: str, *, admin: bool = False) -> None:
    """One message; the server's paths only for its admin (every student used to see
    "/srv/.../rdqn.db is not an rdqn run store"), the run folder as $RDQN_HOME for the rest."""
    assert not at.exception, at.exception
    (error,) = at.error
    message = error.value.replace("\\", "")
    assert message.startswith("The run store cannot be used:"), message
    assert "RDQN_HOME" in message, message
    if admin:
        assert home in message, message
    else:
        assert home not in message and "/tmp" not in message, message
    assert "Traceback" not in message and 'File "' not in message


def test_the_admin_reads_the_servers_path_and_the_log_has_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    DAMAGED["garbage"](tmp_path / "rdqn.db")
    monkeypatch.setenv("RDQN_ADMIN_TOKEN", "teacher-only-token")
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["app.admin_token"] = "teacher-only-token"
    at.run()
    assert_store_message(at, str(tmp_path), admin=True)
    assert any(str(tmp_path) in record.getMessage() for record in caplog.records)


def test_a_store_error_in_the_middle_of_a_page_is_the_same_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken(name: str) -> str:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr("rdqn.dashboard.assets.explanation", broken)  # the home page's text
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


# ------------------------------------------------------------------------------- uploads
MARKET = "rdqn/SyntheticMarket-v0"
GOOD = ("price\n" + "\n".join(str(100 + k % 7) for k in range(600)) + "\n").encode()
BAD_UPLOADS = {
    "not UTF-8": (b"price\n\xff\xfe100\n", "not UTF-8 text (byte 0xff at offset 6)"),
    "Latin-1": ("pr\u00efce\n100\n".encode("latin-1"), "not UTF-8 text (byte 0xef at offset 2)"),
    "too short": (b"price\n1.0\n1.1\n1.2\n", "an episode needs"),
    "no price column": (b"close\n" + b"100\n" * 600, "no column 'price'"),
    "a word": (b"price\n" + b"100\n" * 300 + b"abc\n" + b"100\n" * 300, "'abc' is not a number"),
    "empty": (b"", "empty"),
    "binary": (bytes(range(256)) * 4, "not UTF-8 text"),
    "ragged rows": (b"price,volume\n100,1\n101\n" + b"100,1\n" * 600, "line 3 has 1 field(s)"),
    "100k columns": (b",".join(b"c%d" % i for i in range(100_000)) + b"\n", "columns; the limit"),
    "1e300 prices": (b"price\n" + b"1e300\n" * 600, "'1e300' is outside"),
}


@pytest.mark.parametrize("kind", list(BAD_UPLOADS))
def test_a_rejected_upload_says_why_and_is_never_written(tmp_path: Path, kind: str) -> None:
    from rdqn.dashboard.settings_apply import _checked_upload

    data, why = BAD_UPLOADS[kind]
    with pytest.raises(ValueError, match=r"prices CSV 'x\.csv' rejected: ") as err:
        _checked_upload("x.csv", data)
    assert why in str(err.value)
    assert not (tmp_path / "uploads").exists()


def test_a_utf8_file_with_a_byte_order_mark_is_accepted() -> None:
    from rdqn.dashboard.settings_apply import checked_prices

    assert checked_prices("excel.csv", b"\xef\xbb\xbf" + GOOD).size == 600


def form_upload(at: AppTest, name: str, data: bytes, env: str = MARKET) -> None:
    """Fill the live page's settings form (environment, a file) and press Apply."""
    (env_box,) = [box for box in at.sidebar.selectbox if box.label == "Environment"]
    env_box.set_value(env)
    at.get("file_uploader")[0].set_value((name, data, "text/csv"))
    at.sidebar.button[0].click()
    at.run()
    assert not at.exception


def test_uploads_on_the_live_page_say_what_they_do(tmp_path: Path) -> None:
    """A file for another environment is refused (it was silently ignored); after a rejected
    upload nothing changes and nothing restarts (it trained on simulated prices, unsaid); the
    page says which prices a market run uses."""
    at = open_page("pages/live.py")
    form_upload(at, "ticks.csv", GOOD, env="CartPole-v1")
    assert f"prices CSV 'ticks.csv' not used: prices are for {MARKET} only" in shown(at)
    assert at.session_state["live.run_id"] is None

    at.session_state["live.overrides"] = {"env.id": MARKET}
    at.session_state["live.error"] = None
    at.run()
    assert "Prices: simulated (a seeded price process, seed 0); no file uploaded." in shown(at)
    form_upload(at, "bad.csv", b"price\n\xff\n")
    assert "prices CSV 'bad.csv' rejected: price CSV is not UTF-8 text" in shown(at)
    assert at.session_state["live.run_id"] is None  # no run on simulated prices instead
    assert at.session_state["live.overrides"] == {"env.id": MARKET}
    assert not (tmp_path / "uploads").exists()

    form_upload(at, "ticks.csv", GOOD)
    handle = registry().get(at.session_state["live.run_id"])
    assert handle.config.env.id == MARKET
    assert Path(handle.config.env.kwargs["prices_csv"]).read_bytes() == GOOD
    wait_for(lambda: handle.snapshot() is not None)
    at.run()
    assert "Prices: uploaded file ticks.csv." in shown(at)


def test_the_uploads_folder_keeps_only_the_newest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rdqn.dashboard import state

    monkeypatch.setattr(state, "UPLOADS_KEEP", 3)
    monkeypatch.setattr(state, "UPLOADS_MAX_BYTES", 10 * len(GOOD))
    paths = []
    for k in range(5):
        paths.append(state.save_upload(f"p{k}.csv", GOOD + f"{100 + k}\n".encode()))
        os.utime(paths[-1], (1_000 + k, 1_000 + k))  # distinct ages on any clock
    assert sorted((tmp_path / "uploads").iterdir()) == sorted(paths[2:])
    monkeypatch.setattr(state, "UPLOADS_MAX_BYTES", 2 * len(GOOD) + 20)
    newest = state.save_upload("big.csv", GOOD + b"1\n")
    assert sorted((tmp_path / "uploads").iterdir()) == sorted([paths[4], newest])
    assert state.upload_name(newest) == "big.csv"
