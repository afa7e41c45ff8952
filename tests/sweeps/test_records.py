"""Where a sweep is recorded: the spec file beside the store, trials matched to their runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rdqn.runs.store import RunStore
from rdqn.sweeps import GridError, SweepSpec, list_sweeps, load_spec, spec_path, sweep_trials
from rdqn.sweeps.records import save_spec, trial_runs
from tests.sweeps.sweep_helpers import file_trial


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "rdqn.db") as s:
        yield s


@pytest.fixture
def spec() -> SweepSpec:
    return SweepSpec.from_grid("chain-lesson", {"replay.alpha": [0, 0.6]}, seeds=2, steps=300)


def test_the_spec_is_written_once_beside_the_store_and_read_back(
    store: RunStore, spec: SweepSpec
) -> None:
    path = save_spec(store, spec)
    assert path == spec_path(store, spec.id) == store.path.parent / "sweeps" / f"{spec.id}.json"
    assert json.loads(path.read_text())["grid"] == {"replay.alpha": [0.0, 0.6]}
    assert load_spec(store, spec.id) == spec
    before = path.stat().st_mtime_ns
    assert save_spec(store, spec) == path and path.stat().st_mtime_ns == before
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temporaries


def test_an_unknown_or_damaged_sweep_is_named(store: RunStore, spec: SweepSpec) -> None:
    save_spec(store, spec)
    with pytest.raises(
        GridError, match=rf"no sweep '0123456789ab' in .*\(sweeps there: {spec.id}\)"
    ):
        load_spec(store, "0123456789ab")
    spec_path(store, "00000000beef").write_text("{not json", encoding="utf-8")
    with pytest.raises(GridError, match=r"sweep file .*00000000beef.json cannot be read"):
        load_spec(store, "00000000beef")
    # An id that is not one names no file, here or elsewhere (it listed another folder's files).
    for made_up in ("../../etc", "nope", spec.id + "0", spec.id.upper()):
        with pytest.raises(GridError, match=r"is not a sweep id \(12 hex digits"):
            load_spec(store, made_up)


def test_runs_are_matched_to_trials_by_config_finished_run_first(
    store: RunStore, spec: SweepSpec
) -> None:
    first, second, third, fourth = spec.trials()
    lost = file_trial(store, spec, first, "failed", error="the worker process was killed")
    done = file_trial(store, spec, first, "finished")
    newer_failure = file_trial(store, spec, second, "failed", error="boom")
    stopped = file_trial(store, spec, third, "stopped")
    store.create_run(**spec.config(fourth).record_fields())  # not in the sweep's group
    other = SweepSpec.from_grid("chain-lesson", {"replay.alpha": [1]}, seeds=1, steps=300)
    file_trial(store, other, other.trials()[0], "finished")  # another sweep

    runs = trial_runs(store, spec)
    assert [r.run_id for r in runs[first.key]] == [done, lost]
    assert [r.run_id for r in runs[second.key]] == [newer_failure]
    assert [(r.run_id, r.status) for r in runs[third.key]] == [(stopped, "stopped")]
    assert fourth.key not in runs

    table = sweep_trials(store, spec)
    assert list(table["key"]) == [t.key for t in spec.trials()]
    assert list(table["replay.alpha"]) == [0.0, 0.6, 0.0, 0.6]
    assert list(table["seed"]) == [0, 0, 1, 1]
    assert list(table["run_id"]) == [done, newer_failure, stopped, None]
    assert list(table["status"]) == ["finished", "failed", "stopped", None]
    assert list(table["runs"]) == [2, 1, 1, 0]
    assert table["error"][1] == "boom"


def test_list_sweeps_counts_each_sweeps_trials(store: RunStore, spec: SweepSpec) -> None:
    assert list_sweeps(store).empty
    save_spec(store, spec)
    first, second, *_ = spec.trials()
    file_trial(store, spec, first, "finished")
    file_trial(store, spec, second, "failed", error="boom")
    [row] = list_sweeps(store).to_dict("records")
    assert {k: row[k] for k in ("sweep_id", "preset", "grid", "trials", "finished", "failed")} == {
        "sweep_id": spec.id,
        "preset": "chain-lesson",
        "grid": "replay.alpha",
        "trials": 4,
        "finished": 1,
        "failed": 1,
    }


def test_a_spec_that_cannot_be_written_is_one_store_error_naming_the_file(
    store: RunStore, spec: SweepSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only or full home raised OSError from here: a traceback from `rdqn sweep`."""
    import errno

    from rdqn.runs.store_access import StoreError, StoreFull
    from rdqn.sweeps import records

    (store.path.parent / "sweeps").write_text("a file where the folder goes", encoding="utf-8")
    with pytest.raises(StoreError, match=rf"the sweep's file .*{spec.id}.json cannot be written"):
        save_spec(store, spec)
    (store.path.parent / "sweeps").unlink()

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(records.json, "dump", full)
    with pytest.raises(StoreFull, match="No space left on device"):
        save_spec(store, spec)
    assert not [p for p in (store.path.parent / "sweeps").iterdir()]  # no temporary left
