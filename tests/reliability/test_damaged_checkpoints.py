"""A stopped run's checkpoint damaged, or its store copied elsewhere.

With 10 flipped bits in a stopped run's checkpoint, ``python -m rdqn resume ID`` trained on
silently for some flips and died with a segmentation fault for others. Now a checkpoint carries
the SHA-256 of its bytes (`rdqn.runs.checkpoints`), checked before anything is unpickled: a
damaged one is refused in one line naming the run and the file, exit status 2, and the run stays
listed as it was, rows and file untouched. A checkpoint of an older rdqn (no digest) that cannot
be restored is one line too, never a traceback. A copied home resumes from its own files: the
store records them relative to its folder.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch

from rdqn.cli import main
from rdqn.runs.checkpoints import CHECKPOINT_FORMAT, load_checkpoint
from rdqn.runs.lifecycle import RecordedRun
from rdqn.runs.resume import resume_blocker
from rdqn.runs.store import RunStore
from tests.run_helpers import tiny

BUDGET = 400
STOP_AT = 150


@pytest.fixture(autouse=True)
def _restore_torch_threads() -> Iterator[None]:
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def stopped_run(home: Path) -> str:
    """A run of ``BUDGET`` env steps stopped at ``STOP_AT``, as Ctrl-C stops one."""
    with RunStore(home / "rdqn.db") as store:
        run = RecordedRun(tiny(BUDGET), store)
        run.open().run(steps=STOP_AT)
        run.record_progress()
        run.close("stopped", "stopped by Ctrl-C")
        assert run.id is not None
        return run.id


@pytest.fixture
def stopped(tmp_path: Path) -> tuple[Path, str, Path]:
    """A home with one stopped run: the home, the run's id and its checkpoint file."""
    home = tmp_path / "home"
    run_id = stopped_run(home)
    return home, run_id, home / "checkpoints" / f"{run_id}.pt"


def everything_stored(home: Path, run_id: str) -> tuple[Any, ...]:
    with RunStore(home / "rdqn.db") as store:
        record = store.get_run(run_id)
        return record, store.episodes(run_id), store.steps(run_id), store.list_runs()


def assert_same_store(before: tuple[Any, ...], after: tuple[Any, ...]) -> None:
    assert before[0] == after[0]
    for old, new in zip(before[1:], after[1:], strict=True):
        pd.testing.assert_frame_equal(old, new)


def resume(home: Path, run_id: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["--home", str(home), "resume", run_id, "--quiet"])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code: int, out: str, err: str) -> str:
    assert code == 2 and out == "", (code, out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rdqn: error: "), err
    return lines[0]


@pytest.mark.parametrize("seed", range(8))
def test_ten_flipped_bits_are_refused_in_one_line_and_change_nothing(
    seed: int,
    stopped: tuple[Path, str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, run_id, checkpoint = stopped
    data = bytearray(checkpoint.read_bytes())
    rng = random.Random(seed)
    for bit in rng.sample(range(len(data) * 8), 10):
        data[bit // 8] ^= 1 << (bit % 8)
    checkpoint.write_bytes(bytes(data))
    before = everything_stored(home, run_id)

    line = assert_one_line(*resume(home, run_id, capsys))

    assert line == (
        f"rdqn: error: cannot resume run {run_id}: checkpoint {checkpoint} is damaged (digest "
        "mismatch); the run stays listed with its rows"
    )
    assert_same_store(before, everything_stored(home, run_id))
    assert checkpoint.read_bytes() == bytes(data)
    assert before[0].status == "stopped"


def write_without_digest(path: Path, state: dict[str, Any]) -> None:
    """``state`` as a checkpoint of an rdqn that wrote no digest."""
    torch.save({"format": CHECKPOINT_FORMAT, "version": 2, **state}, path)


def no_counters(state: dict[str, Any]) -> None:
    del state["counters"]["updates"]


def no_telemetry(state: dict[str, Any]) -> None:
    del state["resume"]["telemetry"]


def no_replay(state: dict[str, Any]) -> None:
    state["resume"]["replay"] = {}


def weights_of_another_shape(state: dict[str, Any]) -> None:
    online = state["agent"]["online"]
    name = next(iter(online))
    online[name] = torch.zeros(3, 1)


def generator_state_damaged(state: dict[str, Any]) -> None:
    state["resume"]["env_rng"] = {"bit_generator": "PCG64", "state": "zzz"}


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (no_counters, "is damaged (its counters cannot be read: KeyError: 'updates')"),
        (no_telemetry, "cannot be restored: KeyError: 'telemetry'"),
        (no_replay, "cannot be restored: "),
        (weights_of_another_shape, "cannot be restored: RuntimeError: Error(s) in loading"),
        (generator_state_damaged, "cannot be restored"),
    ],
)
def test_an_older_checkpoint_that_cannot_be_restored_is_one_line(
    damage: Any,
    said: str,
    stopped: tuple[Path, str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without a digest nothing tells damaged bytes apart until they are restored: whatever
    error that raises (KeyError, torch's RuntimeError, ValueError...) is one line naming the run
    and the file, and the run stays 'stopped', listed with its rows."""
    home, run_id, checkpoint = stopped
    state = load_checkpoint(checkpoint)
    damage(state)
    write_without_digest(checkpoint, state)
    before = everything_stored(home, run_id)

    line = assert_one_line(*resume(home, run_id, capsys))

    assert line.startswith(f"rdqn: error: cannot resume run {run_id}: ")
    assert str(checkpoint) in line and said in line, line
    assert line.endswith("; the run stays listed with its rows")
    record, episodes, steps, listed = everything_stored(home, run_id)
    assert record.status == "stopped" and list(listed["id"]) == [run_id]
    assert (record.env_steps, record.updates, record.episodes) == (
        before[0].env_steps,
        before[0].updates,
        before[0].episodes,
    )
    pd.testing.assert_frame_equal(episodes, before[1])
    pd.testing.assert_frame_equal(steps, before[2])


def test_a_copied_home_resumes_from_its_own_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It resumed from the original folder's file, and failed once that folder was gone."""
    original = tmp_path / "a" / "home"
    run_id = stopped_run(original)
    moved = tmp_path / "b" / "moved"
    shutil.copytree(original, moved)
    shutil.rmtree(original)

    code, out, err = resume(moved, run_id, capsys)

    assert code == 0, err
    assert out.startswith(f"run {run_id}: finished, {BUDGET} env steps")
    with RunStore(moved / "rdqn.db") as store:
        record = store.get_run(run_id)
    assert (record.status, record.env_steps) == ("finished", BUDGET)
    assert record.checkpoint_path == str(moved / "checkpoints" / f"{run_id}.pt")
    assert not original.exists()


def test_a_store_that_recorded_absolute_paths_still_resumes(
    stopped: tuple[Path, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stores written before paths were relative hold absolute ones: read as they are."""
    home, run_id, checkpoint = stopped
    elsewhere = tmp_path / "elsewhere.pt"
    shutil.move(checkpoint, elsewhere)
    with closing(sqlite3.connect(home / "rdqn.db")) as raw:
        raw.execute("UPDATE runs SET checkpoint_path = ?", (str(elsewhere),))
        raw.commit()
    with RunStore(home / "rdqn.db") as store:
        assert store.get_run(run_id).checkpoint_path == str(elsewhere)
        assert resume_blocker(store, run_id) is None

    code, out, err = resume(home, run_id, capsys)

    assert code == 0, err
    with closing(sqlite3.connect(home / "rdqn.db")) as raw:
        (stored,) = raw.execute("SELECT checkpoint_path FROM runs").fetchone()
    assert stored == f"checkpoints/{run_id}.pt"  # its next checkpoint is the store's own
