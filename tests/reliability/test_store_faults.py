"""A broken, read-only or full run store, and a home folder that cannot hold one.

Every ``python -m rdqn`` command that opens the store (train, resume, compare, runs list / show /
export / delete; presets beside them) runs in process against each fault. A store that cannot be
used gives exit status 2 and one line naming the path and what to do, never a traceback, and the
file is left exactly as it was; a read-only store can be listed, shown and exported. A full disk
fails the run with "disk full while ...: free space in <folder>", and the checkpoint saved before
it is intact.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rdqn.cli import main
from rdqn.runs import checkpoints, lifecycle
from rdqn.runs.checkpoints import checkpoint_bytes, load_checkpoint, write_checkpoint
from rdqn.runs.lifecycle import RecordedRun, run_to_end
from rdqn.runs.schema import MIGRATIONS, SCHEMA_VERSION
from rdqn.runs.store import RunStore, StoreError
from tests.run_helpers import tiny, wait_for
from tests.runs.store_helpers import episode_rows, new_run

TINY = ["--quiet", "--set", "train.learning_starts=32", "--set", "replay.capacity=256"]
TINY += ["--set", "replay.batch_size=16"]
RUN_ID = "0123456789ab"


def commands(home: Path, run_id: str, report: Path) -> dict[str, list[str]]:
    return {
        "train": ["train", "--steps", "60", *TINY],
        "resume": ["resume", run_id],
        "compare": ["compare", "--steps", "60", "--seeds", "0", "--schemes", "uniform"]
        + ["--report", str(report), *TINY],
        "runs list": ["runs", "list"],
        "runs show": ["runs", "show", run_id],
        "runs export": ["runs", "export", run_id],
        "runs delete": ["runs", "delete", run_id],
        "presets": ["presets"],
    }


def run_cli(
    home: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    code = main(["--home", str(home), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def thread_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    """`compare` trains in this process: no worker processes for a store that fails anyway."""
    monkeypatch.setenv("RDQN_EXECUTOR", "thread")


@pytest.fixture(scope="module")
def finished_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one finished run (trained once for the module)."""
    home = tmp_path_factory.mktemp("reference")
    assert main(["--home", str(home), "train", "--steps", "60", *TINY]) == 0
    with RunStore(home / "rdqn.db") as store:
        return home, str(store.list_runs()["id"].iloc[0])


# -- faults: each makes a home folder (or names one) whose store cannot be used ------------------


def garbage(base: Path, reference: Path) -> Path:
    (base / "rdqn.db").write_bytes(b"this is not a database\n" * 400)
    return base


def truncated(base: Path, reference: Path) -> Path:
    data = (reference / "rdqn.db").read_bytes()
    (base / "rdqn.db").write_bytes(data[: len(data) // 2])
    return base


def header_only(base: Path, reference: Path) -> Path:
    (base / "rdqn.db").write_bytes((reference / "rdqn.db").read_bytes()[:100])
    return base


def another_programs_database(base: Path, reference: Path) -> Path:
    raw = sqlite3.connect(base / "rdqn.db")
    raw.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)")
    raw.execute("INSERT INTO invoices VALUES (1, 9.5)")
    raw.commit()
    raw.close()
    return base


def newer_schema(base: Path, reference: Path) -> Path:
    shutil.copy(reference / "rdqn.db", base / "rdqn.db")
    raw = sqlite3.connect(base / "rdqn.db")
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    return base


def home_is_a_file(base: Path, reference: Path) -> Path:
    (base / "home").write_text("a file, not a folder\n")
    return base / "home"


def home_under_a_file(base: Path, reference: Path) -> Path:
    (base / "file").write_text("a file, not a folder\n")
    return base / "file" / "home"


def home_is_proc(base: Path, reference: Path) -> Path:
    return Path("/proc")


def database_is_a_folder(base: Path, reference: Path) -> Path:
    (base / "rdqn.db").mkdir()
    (base / "rdqn.db" / "keep.txt").write_text("mine\n")
    return base


FAULTS: dict[str, Callable[[Path, Path], Path]] = {
    f.__name__: f
    for f in (
        garbage,
        truncated,
        header_only,
        another_programs_database,
        newer_schema,
        home_is_a_file,
        home_under_a_file,
        home_is_proc,
        database_is_a_folder,
    )
}


def snapshot(home: Path) -> dict[str, bytes]:
    """Every file under ``home`` (empty for /proc and for a home that is not a folder)."""
    if home == Path("/proc") or not home.is_dir():
        return {}
    return {str(p): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fault", FAULTS)
def test_every_command_reports_an_unusable_store_in_one_line(
    fault: str,
    tmp_path: Path,
    finished_store: tuple[Path, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    reference, run_id = finished_store
    home = FAULTS[fault](tmp_path, reference)
    before = snapshot(home)
    named = str(home / "rdqn.db") if home.is_dir() else str(home)
    for name, args in commands(home, run_id, tmp_path / "report.html").items():
        code, out, err = run_cli(home, args, capsys)
        if name == "presets":
            assert code == 0 and "e14" in out, err
            continue
        if name == "runs list" and fault == "home_is_proc":
            # A folder that holds no store (as far as a read can tell): nothing to list.
            assert (code, err) == (0, ""), err
            assert out == f"no runs stored yet: there is no run store at {named}\n"
            continue
        lines = err.strip().splitlines()
        assert code == 2, (name, out, err)
        assert len(lines) == 1 and lines[0].startswith("rdqn: error: "), (name, err)
        assert named in lines[0] or str(home) in lines[0], (name, err)
        assert "RDQN_HOME" in lines[0] or "move it away" in lines[0], (name, err)
    assert snapshot(home) == before  # nothing of what was there is lost or changed


@pytest.mark.parametrize("exists", [False, True], ids=["missing-folder", "empty-folder"])
def test_reading_where_no_store_exists_creates_nothing(
    exists: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: ``rdqn --home /nonexistent/a/b runs list`` exited 0 having created the folders
    and an empty store. Reads create nothing: listing finds no runs, a run asked for by id is
    one line with exit status 2 naming the store it looked for."""
    home = tmp_path / "a" / "b"
    if exists:
        home.mkdir(parents=True)
    db = home / "rdqn.db"
    out_file = tmp_path / "out.csv"
    reads = {
        "runs list": ["runs", "list"],
        "runs show": ["runs", "show", RUN_ID],
        "runs export": ["runs", "export", RUN_ID, "--out", str(out_file)],
        "runs delete": ["runs", "delete", RUN_ID],
        "resume": ["resume", RUN_ID],
    }
    for name, args in reads.items():
        code, out, err = run_cli(home, args, capsys)
        if name == "runs list":
            assert (code, err) == (0, ""), err
            assert out == f"no runs stored yet: there is no run store at {db}\n"
        else:
            lines = err.strip().splitlines()
            assert code == 2 and out == "", (name, out, err)
            assert len(lines) == 1 and lines[0].startswith("rdqn: error: "), (name, err)
            assert f"there is no run store at {db}" in lines[0] and RUN_ID in lines[0]
        assert sorted(tmp_path.rglob("*")) == ([tmp_path / "a", home] if exists else []), name
    with pytest.raises(StoreError, match="there is no run store at"):
        RunStore(db, create=False)
    assert not db.exists()


# -- read-only stores ------------------------------------------------------------------------
# -- read-only stores ------------------------------------------------------------------------


@contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    """Make files and folders read-only: by mode, and as immutable for root, whom modes do not
    stop (``chattr +i``)."""
    root = os.geteuid() == 0
    for path in paths:
        path.chmod(0o555 if path.is_dir() else 0o444)
    if root:
        subprocess.run(["chattr", "+i", *map(str, paths)], check=True)
    try:
        yield
    finally:
        if root:
            subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
        for path in paths:
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_a_read_only_store_is_read_and_refuses_writes_in_one_line(
    tmp_path: Path, finished_store: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    reference, finished = finished_store
    home = tmp_path / "home"
    shutil.copytree(reference, home)
    with RunStore(home / "rdqn.db") as store:
        queued = RecordedRun(tiny(60), store).create()  # stopped before it started
        store.set_status(queued, "stopped", "never started: the process that queued it ended")
        csv = store.metrics.export_csv(finished, "episodes")
    files = [home / "rdqn.db", *(home / "checkpoints").iterdir(), home / "checkpoints", home]
    before = snapshot(home)
    with read_only(*files):
        code, out, err = run_cli(home, ["runs", "list"], capsys)
        assert code == 0 and finished in out and queued in out, err
        code, out, err = run_cli(home, ["runs", "show", finished], capsys)
        assert code == 0 and '"status": "finished"' in out, err
        code, out, err = run_cli(home, ["runs", "export", finished], capsys)
        assert (code, out) == (0, csv), err
        target = tmp_path / "episodes.csv"
        code, out, err = run_cli(home, ["runs", "export", finished, "--out", str(target)], capsys)
        assert code == 0 and target.read_text() == csv, err
        writes = commands(home, queued, tmp_path / "report.html")
        for name in ("train", "resume", "compare", "runs delete"):
            code, out, err = run_cli(home, writes[name], capsys)
            lines = err.strip().splitlines()
            assert code == 2 and len(lines) == 1, (name, err)
            assert f"the run store {home / 'rdqn.db'} is read-only" in lines[0], (name, err)
        assert snapshot(home) == before
    assert sorted(p.name for p in home.iterdir()) == ["checkpoints", "rdqn.db"]  # no -wal, -shm


def test_a_read_only_store_of_an_older_schema_is_read_without_migrating(tmp_path: Path) -> None:
    path = tmp_path / "rdqn.db"
    raw = sqlite3.connect(path)
    for statements in MIGRATIONS[:2]:
        for statement in statements:
            raw.execute(statement)
    raw.execute("PRAGMA user_version = 2")
    raw.execute(
        "INSERT INTO runs (id, created_at, updated_at, status, env_id, scheme, seed, config_json, "
        "env_steps) VALUES ('old', 0, 0, 'finished', 'CartPole-v1', 'uniform', 0, '{}', 40)"
    )
    raw.commit()
    raw.close()
    with read_only(path, tmp_path), RunStore(path) as store:
        assert store.read_only
        record = store.get_run("old")
        assert (record.status, record.env_steps, record.owner_start) == ("finished", 40, None)
        assert list(store.list_runs()["id"]) == ["old"]
        assert store.mark_interrupted() == 0
        with pytest.raises(StoreError, match="read-only"):
            store.set_status("old", "stopped")
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 2  # not migrated
    raw.close()


# -- a full disk -----------------------------------------------------------------------------


def no_space(*args: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_fails_the_run_and_keeps_its_last_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills after the first periodic checkpoint: the next save fails, the run ends
    'failed' saying so, and the checkpoint saved before loads as it was (no temporary left)."""
    real_fsync = os.fsync
    # Saves every 100 steps, whatever a save costs on a busy machine.
    monkeypatch.setattr(lifecycle, "next_checkpoint_gap", lambda period, cost: period)
    with RunStore(tmp_path / "rdqn.db") as store:
        target = store.checkpoint_dir

        def fsync(fd: int) -> None:
            """Writing a file's bytes fails once a checkpoint exists (the folder's fsync not)."""
            if stat.S_ISREG(os.fstat(fd).st_mode) and any(target.glob("*.pt")):
                no_space()
            real_fsync(fd)

        monkeypatch.setattr(checkpoints.os, "fsync", fsync)
        run = run_to_end(RecordedRun(tiny(500), store, checkpoint_every=1e-6))
        record = store.get_run(run.id)
        episodes = store.metrics.episodes(run.id)
    path = store.checkpoint_path_for(run.id)
    assert record.status == "failed"
    assert record.error == (
        f"disk full while saving the checkpoint of run {run.id} to {path}: free space in {target}"
    )
    assert record.checkpoint_path == str(path) and record.resume_env_steps == 100
    assert load_checkpoint(path)["counters"]["env_steps"] == 100
    assert [p.name for p in target.iterdir()] == [path.name]
    assert len(episodes) == record.episodes > 0  # the rows written before it stay


def test_a_full_disk_at_the_end_of_a_cli_run_is_one_line_and_a_failed_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(checkpoints.os, "fsync", no_space)
    code, out, err = run_cli(tmp_path, ["train", "--steps", "60", *TINY], capsys)
    assert code == 1
    assert "Traceback" not in err
    with RunStore(tmp_path / "rdqn.db") as store:
        (run_id,) = store.list_runs()["id"]
        record = store.get_run(run_id)
    assert record.status == "failed"
    assert record.error is not None and record.error.startswith("disk full while saving")
    assert err.strip() == f"run {run_id} failed: {record.error}"
    assert f"run {run_id}: failed" in out


def test_a_full_disk_under_sqlite_is_a_store_error_and_keeps_the_rows(tmp_path: Path) -> None:
    store_path = tmp_path / "rdqn.db"
    with RunStore(store_path) as store:
        run_id = new_run(store)
        store.write_metrics(run_id, episodes=episode_rows(5))
        conn = store._db.connect()  # this thread's connection: cap the file at its size now
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(StoreError, match=f"disk full while writing the run store {store_path}"):
            store.write_metrics(run_id, episodes=episode_rows(2000, start=5))
        assert len(store.metrics.episodes(run_id)) == 5


# -- a save cut short ------------------------------------------------------------------------


def _save_and_hang(path: Path) -> None:
    """In a forked child: a checkpoint write that hangs in fsync, its bytes written."""
    os.fsync = lambda fd: signal.pause()  # type: ignore[assignment]  # until the test kills it
    write_checkpoint(b"PK\x03\x04" + bytes(1 << 20), path)


def test_a_save_killed_midway_leaves_a_temporary_file_the_next_open_removes(
    tmp_path: Path,
) -> None:
    with RunStore(tmp_path / "rdqn.db") as store:
        run_id = new_run(store)
        store.save_checkpoint(run_id, checkpoint_bytes({"step": 1}))
        target = store.checkpoint_path_for(run_id)
    child = multiprocessing.get_context("fork").Process(target=_save_and_hang, args=(target,))
    child.start()
    try:
        wait_for(
            lambda: any(p.stat().st_size > 1 << 20 for p in target.parent.glob(".*.tmp")),
            30,
            what="the child never wrote its temporary file",
        )
    finally:
        os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]
        child.join(10)
    assert len(list(target.parent.glob(".*.tmp"))) == 1  # the orphan, 1 MB
    RunStore(tmp_path / "rdqn.db").close()
    assert list(target.parent.iterdir()) == [target]
    assert load_checkpoint(target) == {"step": 1}  # the checkpoint saved before is intact
