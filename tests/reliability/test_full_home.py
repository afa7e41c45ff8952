"""A full RDQN_HOME on every command and every page.

The home is a small tmpfs filled to its last byte, holding a store with a finished run and a
stopped, resumable one. Every command reads what is stored and refuses a write in one line,
exit 2, naming the folder to free; every page draws, the stored runs listed; Start and Try this
setup myself say in one line that the disk is full. Once space is freed, writing works again
without a restart. A run that fills the disk while it trains ends 'failed' with "disk full
while ...", its rows readable, no temporary file left.

Before: a store no process held open could not be opened on a full disk at all, not even to
read ("cannot read or write the run store ... (disk I/O error)"): SQLite must grow the 32 KiB
shared-memory file it reads a WAL database through. Every command, reads included, failed, and
every page of the dashboard showed only that message. ``runs export --out`` left an empty file
behind, and over an existing file left it truncated (the file's old content lost).

Where this process cannot mount, the store's part runs against an emulated full disk: SQLite's
own error (``SQLITE_IOERR_SHMSIZE``) raised by every connection for writing, until space is
"freed".
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rdqn.runs import store as store_module
from rdqn.runs import store_access
from rdqn.runs.checkpoints import load_checkpoint
from rdqn.runs.store import RunStore, StoreFull
from tests.app.conftest import isolated_app  # noqa: F401 - autouse: private RDQN_HOME, threads
from tests.reliability.home_mounts import (
    assert_the_reads_work,
    fill,
    frame_on_every_run,  # noqa: F401 - a fixture
    needs_mount,
    run_cli,
    snapshot,
    store_with_runs,
    tmpfs,
)
from tests.run_helpers import ShiftedTime, wait_for
from tests.runs.store_helpers import episode_rows, new_run

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
TINY = ["--quiet", "--set", "train.learning_starts=32", "--set", "replay.capacity=256"]
TINY += ["--set", "replay.batch_size=16"]
PAGES = ["home", "live", "internals", "sum_tree", "by_hand", "compare", "runs"]


@pytest.fixture
def full_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str, str]]:
    """(home, finished run, stopped run): a full RDQN_HOME holding them, and an exported CSV
    ``old.csv`` written before it filled."""
    home = tmp_path / "home"
    monkeypatch.setenv("RDQN_HOME", str(home))
    with tmpfs(home, "2m"):
        runs = store_with_runs(home)
        (home / "old.csv").write_text("written before the disk filled\n")
        fill(home)
        yield home, *runs


def stored(home: Path) -> dict[str, bytes]:
    """What the home stores: SQLite's own empty log and shared-memory files aside."""
    files = snapshot(home)
    for name in ("rdqn.db-wal", "rdqn.db-shm"):
        log = files.pop(str(home / name), b"")
        assert name.endswith("-shm") or log == b"", name
    return files


@needs_mount
def test_every_command_reads_or_refuses_in_one_line_and_writes_once_space_is_freed(
    full_home: tuple[Path, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, finished, stopped = full_home
    before = stored(home)
    full = (
        f"rdqn: error: the disk holding the run store {home / 'rdqn.db'} is full: runs can be "
        f"listed, shown and exported, not written; free space in {home} or set RDQN_HOME"
    )
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
        assert code == 2 and line.startswith(full), (name, line)
    code, line = run_cli(home, ["runs", "export", finished, "--out", str(home / "x.csv")], capsys)
    assert code == 2 and line.endswith("cannot be written: No space left on device")

    assert_the_reads_work(home, (finished, stopped), '"resumable": true', tmp_path, capsys)
    assert stored(home) == before  # old.csv too: nothing lost, nothing half-written

    (home / "filler").unlink()
    code, out = run_cli(home, ["resume", stopped, "--quiet"], capsys)
    assert code == 0 and f"run {stopped}: finished, 400 env steps" in out


@needs_mount
def test_an_export_that_does_not_fit_leaves_the_file_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``runs export --out`` wrote in place: on a full disk a new file was left empty or cut
    short, and an existing one truncated (its old content lost). Here the store is held open,
    as a running server holds it, so that it can be read on the full disk before this fix too;
    the export (500 episodes) is larger than what truncating the old file frees."""
    with tmpfs(tmp_path / "home", "2m") as home:
        with RunStore(home / "rdqn.db") as store:
            run_id = new_run(store)
            store.write_metrics(run_id, episodes=episode_rows(500))
            (home / "old.csv").write_text("exported before the disk filled\n")
            fill(home)
            for name in ("new.csv", "old.csv"):
                code, line = run_cli(
                    home, ["runs", "export", run_id, "--out", str(home / name)], capsys
                )
                assert (code, line) == (
                    2,
                    f"rdqn: error: --out {home / name} cannot be written: No space left on device",
                )
        assert (home / "old.csv").read_text() == "exported before the disk filled\n"
        assert not (home / "new.csv").exists() and not list(home.glob(".*.tmp"))


@needs_mount
def test_a_store_opened_on_a_full_disk_writes_once_space_is_freed(
    full_home: tuple[Path, str, str],
) -> None:
    """A server started on a full disk reads its runs, and records new ones as soon as there
    is space again, without a restart; its other threads then read the new rows."""
    home, finished, _ = full_home
    with RunStore(home / "rdqn.db") as store, ThreadPoolExecutor(1) as reader:
        assert store.read_only
        assert reader.submit(store.get_run, finished).result().status == "finished"
        with pytest.raises(StoreFull, match=r"is full: runs can be listed, shown and exported"):
            store.create_run(config={}, env_id="CartPole-v1", scheme="uniform", seed=0)
        (home / "filler").unlink()
        store.set_status(finished, "stopped", "by a test")
        assert not store.read_only
        assert store.get_run(finished).error == "by a test"
        assert reader.submit(store.get_run, finished).result().error == "by a test"


@pytest.mark.slow  # python -m rdqn trains until the disk is full
@needs_mount
def test_a_run_that_fills_the_disk_fails_saying_so_and_keeps_its_rows(tmp_path: Path) -> None:
    """``python -m rdqn train`` on a 600 KB home, checkpointing every half second: the disk
    fills mid-run (its rows or a checkpoint cannot be written)."""
    with tmpfs(tmp_path / "home", "600k") as home:
        env = {**os.environ, "RDQN_HOME": str(home), "RDQN_CHECKPOINT_EVERY": "0.5"}
        args = [sys.executable, "-m", "rdqn", "train", "--steps", "200000", *TINY]
        done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
        with RunStore(home / "rdqn.db") as store:
            (run_id,) = store.list_runs()["id"]
            record = store.get_run(run_id)
            episodes = store.metrics.episodes(run_id)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.strip() == f"run {run_id} failed: {record.error}"
        assert record.status == "failed" and record.error.startswith("disk full while ")
        assert f"free space in {home}" in record.error
        assert 0 < len(episodes) == record.episodes and record.env_steps < 200_000
        if record.checkpoint_path is not None:  # the last one saved is intact
            assert load_checkpoint(record.checkpoint_path)["counters"]["env_steps"] > 0
        assert not list(home.rglob("*.tmp"))


# ------------------------------------------------------------------------------------ pages
def messages(at: AppTest) -> list[str]:
    assert not at.exception, at.exception
    return [e.value.replace("\\", "") for e in at.error]


@needs_mount
@pytest.mark.usefixtures("frame_on_every_run")
def test_every_page_reads_a_full_home_and_starting_says_the_disk_is_full(
    full_home: tuple[Path, str, str],
) -> None:
    home, finished, stopped = full_home
    before = stored(home)
    full = "the disk holding the run store $RDQN_HOME/rdqn.db is full: runs can be listed"
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert messages(at) == [], page
    assert sorted(at.dataframe[0].value["id"]) == sorted([finished, stopped])  # the runs page

    watch = AppTest.from_file(APP, default_timeout=60)
    watch.query_params["run"] = stopped
    watch.run()
    watch.switch_page("pages/live.py").run()
    assert messages(watch) == []
    watch.button(key="live.fork").click().run()
    (message,) = messages(watch)
    assert message.startswith(f"No run can be started: {full}")

    at.switch_page("pages/live.py").run()
    at.button(key="live.start").click().run()
    (message,) = messages(at)
    assert message.startswith(f"No run can be started: {full}")
    assert at.session_state["live.run_id"] is None
    assert stored(home) == before

    (home / "filler").unlink()  # space again: the same server starts runs
    at.session_state["live.overrides"] = {"train.total_steps": 200}
    at.button(key="live.start").click().run()
    assert messages(at) == [] and at.session_state["live.run_id"] is not None


@needs_mount
@pytest.mark.usefixtures("frame_on_every_run")
def test_a_disk_that_fills_while_the_server_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The page's run trains when the disk fills: it ends 'failed' with the reason on the live
    page and Saved runs; Start then says the disk is full; once space is freed it starts."""
    from rdqn.dashboard.state import registry

    with tmpfs(tmp_path / "home", "2m") as home:
        monkeypatch.setenv("RDQN_HOME", str(home))
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        at.switch_page("pages/live.py").run()
        at.session_state["live.overrides"] = {
            "train.total_steps": 1_000_000,
            "train.learning_starts": 32,
            "replay.capacity": 256,
            "replay.batch_size": 16,
        }
        at.button(key="live.start").click().run()
        handle = registry().get(at.session_state["live.run_id"])
        wait_for(lambda: handle.snapshot() is not None and handle.snapshot().env_steps > 0, 60)
        filler = fill(home)
        assert handle.join(60) and handle.status == "failed"
        assert "disk full while writing the run store" in (handle.error or "")
        at.run()
        assert "failed" in at.get("progress")[0].proto.text
        (failed,) = messages(at)
        assert failed.startswith("The run failed: ") and "disk full while writing" in failed
        at.switch_page("pages/runs.py").run()
        assert at.dataframe[0].value["status"].tolist() == ["failed"]  # was 'running'
        at.switch_page("pages/live.py").run()
        at.button(key="live.start").click().run()
        refused, shown_again = messages(at)
        assert refused == (
            "No run can be started: disk full while writing the run store $RDQN_HOME/rdqn.db: "
            "free space in $RDQN_HOME"
        )
        assert shown_again == failed
        filler.unlink()
        at.session_state["live.overrides"] = {"train.total_steps": 200}
        at.button(key="live.start").click().run()
        assert messages(at) == [] and at.session_state["live.run_id"] != handle.id

        def written() -> bool:
            registry().store.list_runs()  # its reads write the status the full disk kept out
            with RunStore(home / "rdqn.db") as other:  # as another process reads the file
                return other.get_run(handle.id).status == "failed"

        wait_for(written, 30)


@needs_mount
def test_a_read_on_a_full_disk_survives_the_sweep_for_dead_owners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: reading runs also marks a dead owner's runs stopped (every few seconds), a
    write; on a full disk it raised, and the read with it: Saved runs showed "the run store
    cannot be used" instead of a failed run whose worker had ended. Now the marking waits for
    space, and the reads go on."""
    clock = ShiftedTime()  # the sweep comes due at once, not seconds later
    monkeypatch.setattr(store_module, "time", clock)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    with tmpfs(tmp_path / "home", "2m") as home, RunStore(home / "rdqn.db") as store:
        run_id = new_run(store)
        store.set_status(run_id, "running")
        with sqlite3.connect(store.path) as raw:  # its owner, a process that has ended
            raw.execute("UPDATE runs SET owner_pid = ? WHERE id = ?", (child.pid, run_id))
        filler = fill(home)
        clock.skip(60.0)
        assert store.list_runs()["id"].tolist() == [run_id]
        assert store.get_run(run_id).status == "running"  # not marked yet: no space
        filler.unlink()
        clock.skip(60.0)
        store.list_runs()
        assert store.get_run(run_id).status == "stopped"


# ----------------------------------------------------- an emulated full disk (no mount needed)
class _FullDisk(sqlite3.Connection):
    """A connection for writing on a disk too full for SQLite's shared-memory file."""

    full = True

    def execute(self, *args: object, **kwargs: object) -> sqlite3.Cursor:
        if _FullDisk.full:
            error = sqlite3.OperationalError("disk I/O error")
            error.sqlite_errorname = "SQLITE_IOERR_SHMSIZE"  # type: ignore[attr-defined]
            raise error
        return super().execute(*args, **kwargs)  # type: ignore[arg-type]


def test_an_emulated_full_disk_reads_and_writes_once_space_is_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    finished, stopped = store_with_runs(home)
    real = store_access.connect

    def connect(db: Path, *, read_only: bool, timeout: float) -> sqlite3.Connection:
        if read_only:
            return real(db, read_only=True, timeout=timeout)
        return sqlite3.connect(
            db, timeout=timeout, isolation_level=None, check_same_thread=False, factory=_FullDisk
        )

    monkeypatch.setattr(store_access, "connect", connect)
    monkeypatch.setattr(_FullDisk, "full", True)
    db = home / "rdqn.db"
    with RunStore(db) as store:
        assert store.read_only
        assert set(store.list_runs()["id"]) == {finished, stopped}
        assert len(store.metrics.episodes(finished)) == store.get_run(finished).episodes > 0
        with pytest.raises(StoreFull) as refused:
            new_run(store)
        assert str(refused.value) == (
            f"the disk holding the run store {db} is full: runs can be listed, shown and "
            f"exported, not written; free space in {home} or set RDQN_HOME (or --home) to "
            "another folder"
        )
        monkeypatch.setattr(_FullDisk, "full", False)  # space is freed
        new = new_run(store)
        assert not store.read_only and len(store.list_runs()) == 3
        assert store.get_run(new).status == "created"
