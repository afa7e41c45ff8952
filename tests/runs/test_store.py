"""Tests for rdqn.runs.store: every API round trip, WAL, concurrency, cascade, crash recovery."""

from __future__ import annotations

import io
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rdqn.runs.processes import process_start
from rdqn.runs.schema import STATUSES
from rdqn.runs.store import (
    RunRecord,
    RunStore,
    default_home,
    owner_hash,
)
from rdqn.runs.writer import RunWriter
from tests.runs.store_helpers import CONFIG, episode_rows, new_run, step_rows

# -- location and schema -----------------------------------------------------------------------


def test_default_home_follows_rdqn_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RDQN_HOME", str(tmp_path / "home"))
    assert default_home() == tmp_path / "home"
    with RunStore() as s:
        assert s.path == tmp_path / "home" / "rdqn.db"
        assert s.checkpoint_dir == tmp_path / "home" / "checkpoints"
    monkeypatch.delenv("RDQN_HOME")
    assert default_home() == Path(".rdqn")


def test_the_store_keeps_a_hash_of_a_runs_owner_never_the_owner(tmp_path: Path) -> None:
    with RunStore(tmp_path / "rdqn.db") as s:
        run_id = s.create_run(config={}, env_id="CartPole-v1", scheme="rank", seed=0)
        assert s.get_run(run_id).owner_hash is None
        s.set_owner_hash(run_id, "secret-owner")
        digest = s.get_run(run_id).owner_hash
        assert digest == owner_hash("secret-owner") and re.fullmatch(r"[0-9a-f]{16}", digest)
        files = [f for f in tmp_path.iterdir() if f.is_file()]
        assert not any(b"secret-owner" in f.read_bytes() for f in files)
        assert owner_hash("secret-owner") != owner_hash("secret-owner2")
        s.set_owner_hash(run_id, None)
        assert s.get_run(run_id).owner_hash is None
        with pytest.raises(KeyError, match="nope"):
            s.set_owner_hash("nope", "x")


def test_in_memory_path_is_refused() -> None:
    with pytest.raises(ValueError, match="in-memory"):
        RunStore(":memory:")


def test_closed_store_refuses_use(tmp_path: Path) -> None:
    s = RunStore(tmp_path / "rdqn.db")
    s.close()
    s.close()
    with pytest.raises(RuntimeError, match="closed"):
        s.list_runs()


# -- runs --------------------------------------------------------------------------------------


def test_create_and_get_run_round_trip(store: RunStore) -> None:
    before = time.time()
    run_id = new_run(store, name="first", group_id="g1")
    record = store.get_run(run_id)
    assert isinstance(record, RunRecord)
    assert len(run_id) == 12 and int(run_id, 16) >= 0
    assert record.id == run_id
    assert record.name == "first"
    assert record.status == "created"
    assert (record.preset, record.env_id, record.scheme, record.seed) == (
        "e14",
        "CartPole-v1",
        "proportional",
        7,
    )
    assert record.config == CONFIG
    assert record.manifest is None
    assert record.group_id == "g1"
    assert (record.env_steps, record.updates, record.episodes) == (0, 0, 0)
    assert before <= record.created_at == record.updated_at <= time.time()
    with pytest.raises(AttributeError):
        record.status = "running"  # type: ignore[misc]


def test_default_name_and_distinct_ids(store: RunStore) -> None:
    ids = {new_run(store, seed=s) for s in range(20)}
    assert len(ids) == 20
    record = store.get_run(new_run(store, preset=None, seed=3))
    assert record.name == "proportional CartPole-v1 seed 3" == record.default_name
    named = store.get_run(
        store.create_run(config={}, name="mine", env_id="E", scheme="rank", seed=1)
    )
    assert named.name == "mine" and named.default_name == "rank E seed 1"


def test_config_must_be_json(store: RunStore) -> None:
    with pytest.raises(TypeError, match="config must be JSON-serialisable"):
        new_run(store, config={"bad": object()})


def test_status_progress_manifest_checkpoint_round_trip(store: RunStore) -> None:
    run_id = new_run(store)
    store.set_status(run_id, "running")
    store.write_metrics(
        run_id, progress={"env_steps": np.int64(1200), "updates": 300, "episodes": 12}
    )
    manifest = {"seed": 7, "environment": {"versions": {"torch": "2.13.0"}}, "peak": 1.5}
    store.set_manifest(run_id, manifest)
    store.set_checkpoint(run_id, store.checkpoint_path_for(run_id))
    record = store.get_run(run_id)
    assert record.status == "running"
    assert (record.env_steps, record.updates, record.episodes) == (1200, 300, 12)
    assert record.manifest == manifest
    assert record.checkpoint_path == str(store.checkpoint_dir / f"{run_id}.pt")
    assert record.updated_at >= record.created_at

    store.set_status(run_id, "failed", error="DivergenceError: loss is nan")
    assert store.get_run(run_id).error == "DivergenceError: loss is nan"
    store.set_status(run_id, "running")
    assert store.get_run(run_id).error is None
    store.set_checkpoint(run_id, None)
    assert store.get_run(run_id).checkpoint_path is None


@pytest.mark.parametrize("status", STATUSES)
def test_every_status_is_accepted(store: RunStore, status: str) -> None:
    run_id = new_run(store)
    store.set_status(run_id, status)
    assert store.get_run(run_id).status == status


def test_bad_status_is_a_value_error(store: RunStore) -> None:
    run_id = new_run(store)
    with pytest.raises(ValueError, match=r"status must be one of .* got 'done'"):
        store.set_status(run_id, "done")
    with pytest.raises(ValueError, match="status must be one of"):
        store.list_runs(status="done")
    assert store.get_run(run_id).status == "created"


def test_unknown_run_id_is_a_clear_key_error(store: RunStore) -> None:
    message = r"no run with id 'feedfacecafe' in .*rdqn\.db"
    with pytest.raises(KeyError, match=message):
        store.get_run("feedfacecafe")
    with pytest.raises(KeyError, match=message):
        store.set_status("feedfacecafe", "running")
    with pytest.raises(KeyError, match=message):
        store.write_metrics("feedfacecafe", progress={"env_steps": 1, "updates": 1, "episodes": 1})
    with pytest.raises(KeyError, match=message):
        store.write_metrics("feedfacecafe", steps=step_rows(2))
    with pytest.raises(KeyError, match=message):
        store.metrics.episodes("feedfacecafe")
    with pytest.raises(KeyError, match=message):
        store.delete_run("feedfacecafe")
    with pytest.raises(KeyError, match=message):
        store.save_checkpoint("feedfacecafe", b"")
    writer = RunWriter(store, "feedfacecafe")
    writer.add_step(**step_rows(1)[0])
    with pytest.raises(KeyError, match=message):
        writer.flush()


def test_list_runs_newest_first_and_filters(store: RunStore) -> None:
    empty = store.list_runs()
    assert empty.empty and {"id", "status", "config_json", "group_id"} <= set(empty.columns)
    a = new_run(store, group_id="cmp")
    b = new_run(store, group_id="cmp", scheme="uniform")
    c = new_run(store)
    store.set_status(b, "finished")
    runs = store.list_runs()
    assert list(runs["id"]) == [c, b, a]
    assert list(store.list_runs(group_id="cmp")["id"]) == [b, a]
    assert list(store.list_runs(status="finished")["id"]) == [b]
    assert list(store.list_runs(status="created", group_id="cmp")["id"]) == [a]
    assert json.loads(runs.loc[runs["id"] == a, "config_json"].iloc[0]) == CONFIG


def test_statuses_are_those_list_runs_gives(store: RunStore) -> None:
    assert store.statuses() == {}
    a, b = new_run(store), new_run(store)
    store.set_status(b, "running")
    store._unwritten.keep(a, "failed", "the disk is full")  # a status the file has not taken
    runs = store.list_runs()
    assert store.statuses() == dict(zip(runs["id"], runs["status"], strict=True))
    assert store.statuses() == {a: "failed", b: "running"}


def test_two_store_objects_see_each_others_writes(tmp_path: Path) -> None:
    with RunStore(tmp_path / "rdqn.db") as one, RunStore(tmp_path / "rdqn.db") as two:
        run_id = new_run(one)
        assert two.get_run(run_id).config == CONFIG
        two.write_metrics(run_id, steps=step_rows(3))
        two.set_status(run_id, "finished")
        assert len(one.metrics.steps(run_id)) == 3
        assert one.get_run(run_id).status == "finished"


def test_another_process_sees_writes(tmp_path: Path) -> None:
    db = tmp_path / "rdqn.db"
    with RunStore(db) as s:
        run_id = new_run(s)
        s.write_metrics(run_id, episodes=episode_rows(4))
    code = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
        "print(c.execute('SELECT COUNT(*) FROM episodes').fetchone()[0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(db)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "4"


# -- metrics -----------------------------------------------------------------------------------


def test_episodes_and_steps_round_trip(store: RunStore) -> None:
    run_id = new_run(store)
    store.write_metrics(run_id, episodes=episode_rows(5))
    store.write_metrics(run_id, steps=step_rows(7))
    episodes = store.metrics.episodes(run_id)
    steps = store.metrics.steps(run_id)
    assert list(episodes.columns) == [
        "episode",
        "env_steps",
        "updates",
        "return",
        "length",
        "wall_time",
    ]
    assert list(steps.columns)[:2] == ["updates", "env_steps"]
    pd.testing.assert_frame_equal(episodes, pd.DataFrame(episode_rows(5)), check_dtype=False)
    pd.testing.assert_frame_equal(steps, pd.DataFrame(step_rows(7)), check_dtype=False)
    assert list(store.metrics.steps(run_id, after=4)["updates"]) == [5, 6]
    assert list(store.metrics.episodes(run_id, after=2)["episode"]) == [3, 4]


def test_missing_columns_are_null_and_numpy_scalars_are_accepted(store: RunStore) -> None:
    run_id = new_run(store)
    store.write_metrics(run_id, steps=[{"updates": np.int64(3), "loss": np.float32(0.5)}])
    steps = store.metrics.steps(run_id)
    assert steps["updates"].tolist() == [3] and steps["loss"].tolist() == [0.5]
    assert steps["q_mean"].dtype == np.float64 and math.isnan(steps["q_mean"].iloc[0])
    assert steps["env_steps"].dtype == "Int64" and steps["env_steps"].isna().all()


def test_bad_metric_rows_are_value_errors(store: RunStore) -> None:
    run_id = new_run(store)
    with pytest.raises(ValueError, match=r"unknown step column\(s\) \['lr'\]"):
        store.write_metrics(run_id, steps=[{"updates": 1, "lr": 0.1}])
    with pytest.raises(ValueError, match="every episode row needs 'episode'"):
        store.write_metrics(run_id, episodes=[{"return": 1.0}])
    assert store.metrics.steps(run_id).empty


def test_repeated_keys_replace_rows(store: RunStore) -> None:
    """A run resumed from an earlier checkpoint re-logs updates it had already logged."""
    run_id = new_run(store)
    store.write_metrics(run_id, steps=step_rows(5))
    store.write_metrics(run_id, steps=[{"updates": 3, "loss": 42.0}])
    steps = store.metrics.steps(run_id)
    assert len(steps) == 5
    assert steps.loc[steps["updates"] == 3, "loss"].item() == 42.0


@pytest.mark.parametrize("kind", ["episodes", "steps"])
def test_export_csv_parses_back_to_the_same_values(store: RunStore, kind: str) -> None:
    run_id = new_run(store)
    store.write_metrics(run_id, episodes=episode_rows(6))
    store.write_metrics(run_id, steps=step_rows(6))
    text = store.metrics.export_csv(run_id, kind)  # type: ignore[arg-type]
    parsed = pd.read_csv(io.StringIO(text))
    expected = store.metrics.episodes(run_id) if kind == "episodes" else store.metrics.steps(run_id)
    pd.testing.assert_frame_equal(parsed, expected, check_dtype=False, check_exact=True)


def test_export_csv_bad_kind(store: RunStore) -> None:
    with pytest.raises(
        ValueError, match="kind must be one of 'episodes', 'steps', 'evaluations', got 'losses'"
    ):
        store.metrics.export_csv(new_run(store), "losses")  # type: ignore[arg-type]


def test_delete_run_cascades_and_removes_own_checkpoint(store: RunStore, tmp_path: Path) -> None:
    keep = new_run(store)
    gone = new_run(store)
    outside = new_run(store)
    for run_id in (keep, gone, outside):
        store.write_metrics(run_id, episodes=episode_rows(3))
        store.write_metrics(run_id, steps=step_rows(3))
    own = store.checkpoint_path_for(gone)
    own.parent.mkdir(parents=True)
    own.write_bytes(b"x")
    foreign = tmp_path / "elsewhere.pt"
    foreign.write_bytes(b"y")
    store.set_checkpoint(gone, own)
    store.set_checkpoint(outside, foreign)

    store.delete_run(gone)
    store.delete_run(outside)
    assert not own.exists()
    assert foreign.exists()
    assert list(store.list_runs()["id"]) == [keep]
    raw = sqlite3.connect(store.path)
    try:
        for table in ("episodes", "steps"):
            ids = {r[0] for r in raw.execute(f"SELECT run_id FROM {table}")}
            assert ids == {keep}
    finally:
        raw.close()


# -- resuming ----------------------------------------------------------------------------------


def test_a_checkpoint_is_recorded_with_the_step_it_resumes_from(store: RunStore) -> None:
    run_id = new_run(store)
    path = store.save_checkpoint(run_id, b"weights only")
    assert store.get_run(run_id).resume_env_steps is None
    assert store.save_checkpoint(run_id, b"resumable", resume_env_steps=40) == path
    assert store.get_run(run_id).resume_env_steps == 40
    store.set_checkpoint(run_id, None, resume_env_steps=40)  # forgetting the file forgets both
    record = store.get_run(run_id)
    assert (record.checkpoint_path, record.resume_env_steps) == (None, None)


def test_a_guarded_status_is_written_only_while_the_run_is_as_expected(store: RunStore) -> None:
    """`set_status` with ``expect`` (a resume taking a run, a dead process's run marked): it
    writes only while the run still has the values expected, in the same write."""
    run_id = new_run(store)
    store.set_status(run_id, "stopped", "stopped by its owner")
    assert not store.set_status(run_id, "running", expect={"status": "running"})
    assert not store.set_status(run_id, "running", expect={"status": "stopped", "env_steps": 9})
    assert store.get_run(run_id).status == "stopped"
    assert store.set_status(run_id, "running", expect={"status": "stopped", "env_steps": 0})
    assert store.get_run(run_id).status == "running"
    with pytest.raises(ValueError, match="expect takes"):
        store.set_status(run_id, "running", expect={"config_json": "{}"})


def test_rewind_drops_the_rows_past_the_resume_point(store: RunStore) -> None:
    run_id = new_run(store)
    store.write_metrics(
        run_id,
        episodes=episode_rows(6, start=1),
        steps=step_rows(30, start=1),
        progress={"env_steps": 60, "updates": 30, "episodes": 6},
    )
    store.set_status(run_id, "stopped", "interrupted: the process running it ended")
    assert store.set_status(run_id, "running", expect={"status": "stopped"}, rewind=(40, 20, 4))
    record = store.get_run(run_id)
    assert (record.status, record.error, record.owner_pid) == ("running", None, os.getpid())
    assert (record.env_steps, record.updates, record.episodes) == (40, 20, 4)
    assert store.metrics.episodes(run_id)["episode"].tolist() == [1, 2, 3, 4]
    assert store.metrics.steps(run_id)["updates"].tolist() == list(range(1, 21))
    with pytest.raises(KeyError, match="nope"):
        store.set_status("nope", "running", rewind=(0, 0, 0))


def test_mark_interrupted_stops_runs_of_dead_processes(store: RunStore) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(dead.stdout)
    crashed, paused, mine, live_other, reused, done, queued = (new_run(store) for _ in range(7))
    for run_id in (crashed, mine, live_other, reused):
        store.set_status(run_id, "running")
    store.set_status(paused, "paused")
    store.set_status(done, "finished")
    sleeper = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    try:
        start = process_start(sleeper.pid)
        assert start is not None
        raw = sqlite3.connect(store.path)
        raw.execute(
            "UPDATE runs SET owner_pid = ? WHERE id IN (?, ?, ?)",
            (dead_pid, crashed, paused, queued),
        )
        raw.execute(
            "UPDATE runs SET owner_pid = ?, owner_start = ? WHERE id = ?",
            (sleeper.pid, start, live_other),
        )
        # The sleeper took the pid of a dead owner that started earlier: not the owner.
        raw.execute(
            "UPDATE runs SET owner_pid = ?, owner_start = ? WHERE id = ?",
            (sleeper.pid, start - 1, reused),
        )
        raw.commit()
        raw.close()
        assert store.mark_interrupted() == 5
        runs = (crashed, paused, mine, live_other, reused, done)
        statuses = {r: store.get_run(r).status for r in runs}
    finally:
        sleeper.kill()
        sleeper.wait()
    assert statuses == {
        crashed: "stopped",
        paused: "stopped",
        mine: "stopped",
        live_other: "running",
        reused: "stopped",
        done: "finished",
    }
    assert "interrupted" in (store.get_run(crashed).error or "")
    # A run its dead server queued never started: stopped too, with that reason.
    assert (store.get_run(queued).status, store.get_run(queued).error) == (
        "stopped",
        "never started: the process that queued it ended",
    )
    assert store.mark_interrupted() == 1  # the sleeper is dead now


def test_reading_runs_marks_the_runs_of_dead_owners_interrupted(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No startup call needed: listing or reading runs finds a dead owner's runs (every few
    seconds), and leaves this process's own runs and live owners' runs alone."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    crashed, queued, mine = (new_run(store) for _ in range(3))
    store.set_status(crashed, "running")
    store.set_status(mine, "paused")
    raw = sqlite3.connect(store.path)
    raw.execute(
        "UPDATE runs SET owner_pid = ?, owner_start = 1 WHERE id IN (?, ?)",
        (child.pid, crashed, queued),
    )
    raw.commit()
    raw.close()
    frame = store.list_runs().set_index("id")
    assert frame.loc[crashed, "status"] == "stopped"
    assert frame.loc[crashed, "error"] == "interrupted: the process running it ended"
    assert frame.loc[queued, "error"] == "never started: the process that queued it ended"
    assert frame.loc[mine, "status"] == "paused"
    store.delete_run(crashed)

    checks: list[int] = []
    monkeypatch.setattr(
        "rdqn.runs.orphans.process_alive", lambda pid, start: checks.append(pid) or True
    )
    store.set_status(queued, "running")
    for _ in range(5):
        store.get_run(queued)
        store.list_runs()
    assert checks == []  # swept at most every _SWEEP_EVERY_S seconds
    monkeypatch.setattr(store, "_next_sweep", 0.0)  # that long later
    store.get_run(queued)
    assert checks == [os.getpid()] * 2  # its two runs, both this process's


def test_mark_interrupted_after_a_simulated_crash(tmp_path: Path) -> None:
    """A store reopened after its process 'crashed' (never reset status) recovers the run."""
    first = RunStore(tmp_path / "rdqn.db")
    run_id = new_run(first)
    first.set_status(run_id, "running")
    first.close()
    with RunStore(tmp_path / "rdqn.db") as second:
        assert second.mark_interrupted() == 1
        assert second.get_run(run_id).status == "stopped"
        assert second.mark_interrupted() == 0


# -- concurrency -------------------------------------------------------------------------------


def test_writer_thread_and_reader_thread(store: RunStore) -> None:
    """No 'database is locked'; readers see whole transactions (row counts in steps of 10) and
    progress counters never ahead of the rows written with them."""
    run_id = new_run(store)
    batches, per_batch = 60, 10
    errors: list[BaseException] = []
    seen: list[int] = []
    done = threading.Event()

    def write() -> None:
        try:
            counters = {"env_steps": 0, "updates": 0, "episodes": 0}
            writer = RunWriter(
                store, run_id, flush_every=3600, max_pending=per_batch, progress=counters.copy
            )
            for u in range(batches * per_batch):
                counters.update(env_steps=4 * (u + 1), updates=u + 1)
                writer.add_step(**step_rows(1, start=u)[0])
            writer.close()
        except BaseException as exc:  # re-raised in the main thread
            errors.append(exc)
        finally:
            done.set()

    def read() -> None:
        try:
            while not done.is_set():
                updates = store.get_run(run_id).updates
                n = len(store.metrics.steps(run_id))
                assert n % per_batch == 0, n
                assert n >= updates, (n, updates)
                seen.append(n)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write), threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    assert seen == sorted(seen)
    assert len(store.metrics.steps(run_id)) == batches * per_batch
    assert store.get_run(run_id).updates == batches * per_batch


def test_threads_get_their_own_connections(store: RunStore) -> None:
    conns: list[sqlite3.Connection] = []

    def grab() -> None:
        conns.append(store._db.connect())

    for _ in range(3):
        t = threading.Thread(target=grab)
        t.start()
        t.join()
    assert len(store._db._connections) <= 1  # a finished thread's connection is closed
    conns.append(store._db.connect())
    assert len({id(c) for c in conns}) == 4
    assert len(store._db._connections) <= 2
    for conn in conns[:3]:  # closed with its thread, not when another thread connects
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            conn.execute("SELECT 1")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_opens_its_own_connection(store: RunStore) -> None:
    """Regression guard: a child must not reuse the parent's thread-local sqlite connection."""
    run_id = new_run(store)
    parent_conn = store._db.connect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads alive
        pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            ok = store._db.connect() is not parent_conn
            store.write_metrics(run_id, steps=step_rows(2))
            code = 0 if ok else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(store.metrics.steps(run_id)) == 2


def test_a_checkpoint_in_the_home_is_recorded_relative_to_it(
    store: RunStore, tmp_path: Path
) -> None:
    """A copied or moved home then reads its own files (a copy used to resume from the
    original folder's file); a file elsewhere keeps its absolute path, and absolute paths
    stores recorded before are read as they are."""
    run_id = new_run(store)
    path = store.save_checkpoint(run_id, b"resumable", resume_env_steps=40)
    assert path == store.checkpoint_dir / f"{run_id}.pt"
    raw = sqlite3.connect(store.path)
    try:
        (stored,) = raw.execute("SELECT checkpoint_path FROM runs").fetchone()
        assert stored == f"checkpoints/{run_id}.pt"
        assert store.get_run(run_id).checkpoint_path == str(path)
        elsewhere = tmp_path.parent / "elsewhere.pt"
        store.set_checkpoint(run_id, elsewhere, resume_env_steps=40)
        (stored,) = raw.execute("SELECT checkpoint_path FROM runs").fetchone()
        assert stored == str(elsewhere) == store.get_run(run_id).checkpoint_path
    finally:
        raw.close()
    store.set_checkpoint(run_id, path)
    store.delete_run(run_id)  # removes the file it records relatively
    assert not path.exists()


def test_a_file_where_the_checkpoints_folder_goes_is_named_when_the_store_opens(
    tmp_path: Path,
) -> None:
    """It was found only at a run's first save, after its whole budget."""
    from rdqn.runs.store_access import StoreError

    (tmp_path / "checkpoints").write_text("not a folder", encoding="utf-8")
    with pytest.raises(StoreError, match=r"checkpoints is a file: .* move the file away"):
        RunStore(tmp_path / "rdqn.db")
