"""A read-only RDQN_HOME on every command and every page.

The home is a tmpfs remounted read-only (root is stopped by it as everyone is; without the right
to mount, file modes for a user they stop), holding a store with a finished run and a stopped,
resumable one. Every command reads what can be read and refuses a write in one line, exit 2;
every page draws, the stored runs listed and shown; pressing what would write (Start, Try this
setup myself, Run comparison, an admin's Delete) says in one line that the store is read-only.
Nothing under the home changes. Before: Try this setup myself (a button callback, outside the
app frame that shows a store's failure) ended the page with a bare "This app has encountered an
error" and no page.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import isolated_app  # noqa: F401 - autouse: private RDQN_HOME, threads
from tests.reliability.home_mounts import (
    assert_the_reads_work,
    can_mount,
    frame_on_every_run,  # noqa: F401 - a fixture
    remount_read_only,
    run_cli,
    snapshot,
    store_with_runs,
    tmpfs,
)

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TINY = ["--quiet", "--set", "train.learning_starts=32", "--set", "replay.capacity=256"]
TINY += ["--set", "replay.batch_size=16"]
PAGES = ["home", "live", "internals", "sum_tree", "by_hand", "compare", "runs"]


@pytest.fixture
def read_only_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, str, str]]:
    """(home, finished run, stopped run): a read-only RDQN_HOME holding them."""
    home = tmp_path / "home"
    monkeypatch.setenv("RDQN_HOME", str(home))
    if can_mount():
        with tmpfs(home, "64m"):
            runs = store_with_runs(home)
            remount_read_only(home)
            yield home, *runs
    elif os.geteuid() != 0:
        home.mkdir()
        runs = store_with_runs(home)
        paths = [home, home / "checkpoints", *home.rglob("*")]
        for path in paths:
            path.chmod(0o555 if path.is_dir() else 0o444)
        yield home, *runs
        for path in paths:
            path.chmod(0o755 if path.is_dir() else 0o644)
    else:
        pytest.skip("root without the right to mount: nothing here is read-only to it")


def test_every_command_reads_or_refuses_in_one_line(
    read_only_home: tuple[Path, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, finished, stopped = read_only_home
    before = snapshot(home)
    read_only = f"rdqn: error: the run store {home / 'rdqn.db'} is read-only: runs can be listed"
    report = tmp_path / "report.html"
    refused = {
        "train": ["train", "--steps", "60", *TINY],
        "resume": ["resume", stopped],
        "compare": ["compare", "--steps", "60", "--seeds", "0", "--schemes", "uniform"]
        + ["--report", str(report), *TINY],
        "runs delete": ["runs", "delete", finished],
    }
    for name, args in refused.items():
        code, line = run_cli(home, args, capsys)
        assert code == 2 and line.startswith(read_only), (name, line)
    code, line = run_cli(home, ["runs", "export", finished, "--out", str(home / "x.csv")], capsys)
    assert code == 2 and line.startswith(f"rdqn: error: --out {home / 'x.csv'} cannot be written")

    assert_the_reads_work(home, (finished, stopped), '"env_steps": 100', tmp_path, capsys)
    assert snapshot(home) == before
    assert not report.exists()


def messages(at: AppTest) -> list[str]:
    assert not at.exception, at.exception
    return [e.value.replace("\\", "") for e in at.error]


@pytest.mark.usefixtures("frame_on_every_run")
def test_every_page_reads_and_what_would_write_says_read_only_in_one_line(
    read_only_home: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, finished, stopped = read_only_home
    before = snapshot(home)
    refused = "the run store $RDQN_HOME/rdqn.db is read-only: runs can be listed, shown and"
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert messages(at) == [], page
    ids = at.dataframe[0].value["id"].tolist()  # the runs page, last
    assert sorted(ids) == sorted([finished, stopped])
    at.session_state[at.dataframe[0].key] = {
        "selection": {"rows": [ids.index(stopped)], "columns": [], "cells": []}
    }
    at.run()
    assert messages(at) == [] and "stopped by its owner" in [w.value for w in at.warning]

    watch = AppTest.from_file(APP, default_timeout=60)
    watch.query_params["run"] = finished
    watch.run()
    watch.switch_page("pages/live.py").run()
    assert messages(watch) == [] and any("finished" in m.value for m in watch.markdown)
    watch.query_params["run"] = stopped
    watch.run()
    watch.button(key="live.fork").click().run()
    (message,) = messages(watch)
    assert message.startswith(f"No run can be started: {refused}")

    at.switch_page("pages/live.py").run()
    at.session_state["live.overrides"] = {"train.total_steps": 1_000}
    at.button(key="live.start").click().run()
    assert messages(at) == [
        f"No run can be started: {refused} exported, not written; make "
        "$RDQN_HOME writable or set RDQN_HOME (or --home) to another folder"
    ]
    assert at.session_state["live.run_id"] is None

    at.switch_page("pages/compare.py").run()
    at.button(key="compare.run").click().run()
    (message,) = messages(at)  # the app frame's, for a store that fails inside a page
    assert message.startswith(f"The run store cannot be used: {refused}")

    monkeypatch.setenv("RDQN_ADMIN_TOKEN", "teacher-only-token")
    admin = AppTest.from_file(APP, default_timeout=60)
    admin.session_state["app.admin_token"] = "teacher-only-token"
    admin.run()
    admin.switch_page("pages/runs.py").run()
    admin.session_state[admin.dataframe[0].key] = {
        "selection": {"rows": [0], "columns": [], "cells": []}
    }
    admin.run()
    admin.checkbox(key=f"runs.sure.{admin.session_state['runs.selected'][0]}").check().run()
    admin.button(key="runs.delete").click().run()
    (message,) = messages(admin)
    assert "is read-only: runs can be listed" in message and str(home) in message  # the admin's
    assert snapshot(home) == before
