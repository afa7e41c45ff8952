"""rdqn.dashboard.history: comparison configs, curves from snapshots and store rows, run-card
fields."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rdqn.compare import Curve, comparison_configs
from rdqn.dashboard.history import (
    RunProgress,
    comparison_base,
    curves_by_scheme,
    default_budget,
    final_return,
    format_bytes,
    group_progress,
    manifest_summary,
    progress_frame,
    progress_from_handle,
    progress_from_record,
    runs_table,
    scheme_labels,
    stored_counters,
    waiting_note,
)
from rdqn.presets import preset
from rdqn.runs.store import RunStore
from rdqn.serve.handle import RunHandle
from rdqn.serve.registry import RunRegistry
from tests.run_helpers import wait_for


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(tmp_path / "rdqn.db")


def stored_run(store: RunStore, scheme: str = "uniform", seed: int = 0) -> str:
    config = preset("per-notebook").with_overrides({"replay.scheme": scheme, "seed": seed})
    return store.create_run(
        config=config.to_dict(),
        preset="per-notebook",
        env_id="CartPole-v1",
        scheme=scheme,
        seed=seed,
        group_id="g1",
    )


def row(scheme: str, seed: int, status: str = "finished", steps: int = 50) -> RunProgress:
    curve = Curve(np.array([10, 30], dtype=np.int64), np.array([10.0, 20.0]))
    return RunProgress(f"{scheme}{seed}", scheme, seed, status, steps, 100, 2, curve)


def test_default_budget_caps_long_presets() -> None:
    assert default_budget("per-notebook") == 15_000
    assert default_budget("paper") == preset("paper").train.total_steps
    assert default_budget("chain-lesson") == 4_000


def test_comparison_base_keeps_the_presets_warm_up_at_its_own_budget() -> None:
    """chain-lesson's 1,500 warm-up steps are part of the lesson: its own budget keeps them,
    where `configure` would cap the warm-up at a tenth of the budget."""
    lesson = comparison_base("chain-lesson", "rdqn/SparseChain-v0", 4_000)
    assert lesson == preset("chain-lesson")
    shorter = comparison_base("chain-lesson", "rdqn/SparseChain-v0", 2_000)
    assert (shorter.train.total_steps, shorter.train.learning_starts) == (2_000, 200)
    cartpole = comparison_base("per-notebook", "CartPole-v1", 15_000)
    assert (cartpole.train.total_steps, cartpole.train.learning_starts) == (15_000, 1_000)
    other_env = comparison_base("chain-lesson", "rdqn/BlindCliffwalk-v0", 4_000)
    assert other_env.env.id == "rdqn/BlindCliffwalk-v0" and other_env.env.kwargs == {}


def test_progress_from_record_reads_counters_and_episodes(store: RunStore) -> None:
    run_id = stored_run(store, "rank", 2)
    store.write_metrics(
        run_id,
        episodes=[
            {"episode": 1, "env_steps": 12, "return": 12.0},
            {"episode": 2, "env_steps": 30, "return": 18.0},
        ],
        progress={"env_steps": 35, "updates": 3, "episodes": 2},
    )
    store.set_status(run_id, "failed", "DivergenceError: loss is nan")
    progress = progress_from_record(store.get_run(run_id), store.metrics.episodes(run_id))
    assert (progress.scheme, progress.seed, progress.status) == ("rank", 2, "failed")
    assert progress.label == f"rank · α 0.6 · β₀ 0.4 · seed 2 · {run_id[:6]}"
    assert progress.settings == "rank · α 0.6 · β₀ 0.4"
    assert progress.error == "DivergenceError: loss is nan"
    assert progress.total_steps == 100_000
    assert progress.progress == pytest.approx(35 / 100_000)
    assert progress.done
    assert progress.curve.returns.tolist() == [12.0, 18.0]


def test_stored_counters_catch_up_with_episode_rows(store: RunStore) -> None:
    """A CLI run writes episode rows before it writes its counters."""
    run_id = stored_run(store)
    store.write_metrics(
        run_id, episodes=[{"episode": 7, "env_steps": 140, "updates": 90, "return": 20.0}]
    )
    record = store.get_run(run_id)
    assert (record.env_steps, record.episodes) == (0, 0)
    counters = stored_counters(record, store.metrics.episodes(run_id))
    assert counters == {"env_steps": 140, "updates": 90, "episodes": 7}
    assert stored_counters(record, store.metrics.episodes(run_id).iloc[:0]) == {
        "env_steps": 0,
        "updates": 0,
        "episodes": 0,
    }


def test_a_handle_waiting_for_a_slot_reads_queued() -> None:
    handle = RunHandle(preset("per-notebook"))
    progress = progress_from_handle(handle)
    assert progress.status == "queued"
    assert progress.label == f"proportional · α 0.6 · β₀ 0.4 · seed 0 · {handle.id[:6]}"
    assert progress.env_steps == 0
    assert progress.curve.returns.size == 0
    assert not progress.done


def test_group_progress_says_why_a_queued_run_waits(store: RunStore) -> None:
    registry = RunRegistry(store, max_active=1)
    configs = comparison_configs(preset("per-notebook").with_budget(20_000), ["uniform"], [0, 1, 2])
    handles = registry.enqueue(configs, group_id="g3")
    try:
        wait_for(lambda: handles[0].status == "running")  # as its worker reports it
        rows = group_progress([h.id for h in handles], registry, store)
        assert [r.status for r in rows] == ["running", "queued", "queued"]
        assert [r.waiting for r in rows] == [
            None,
            "waiting, 1st in line (1 run at a time on this server)",
            "waiting, 2nd in line (1 run at a time on this server)",
        ]
        status = progress_frame(rows)["status"].tolist()
        assert status == ["running", rows[1].waiting, rows[2].waiting]
    finally:
        registry.shutdown()


@pytest.mark.parametrize(
    ("place", "max_active", "text"),
    [
        ((1, 1), 1, "waiting, 1st in line (1 run at a time on this server)"),
        ((3, 8), 2, "waiting, 3rd in line (2 runs at a time on this server)"),
        ((11, 12), 1, "waiting, 11th in line (1 run at a time on this server)"),
        ((22, 30), 1, "waiting, 22nd in line (1 run at a time on this server)"),
        (None, 1, "starting"),
    ],
)
def test_waiting_note(place: tuple[int, int] | None, max_active: int, text: str) -> None:
    assert waiting_note(place, max_active) == text


def test_group_progress_prefers_live_handles_and_skips_deleted_runs(store: RunStore) -> None:
    registry = RunRegistry(store, max_active=1)
    (handle,) = registry.enqueue([preset("per-notebook")], group_id="g2")
    try:
        stored, deleted = stored_run(store), stored_run(store)
        store.delete_run(deleted)
        wait_for(lambda: handle.status == "running")  # as its worker reports it
        rows = group_progress([handle.id, stored, deleted], registry, store)
        assert [r.run_id for r in rows] == [handle.id, stored]
        assert rows[0].status == "running"
        assert rows[1].status == "created"
    finally:
        registry.shutdown()


def test_curves_by_scheme_orders_schemes_as_the_paper() -> None:
    curves = curves_by_scheme([row("rank", 0), row("uniform", 0), row("rank", 1), row("x", 0)])
    assert list(curves) == ["uniform", "rank", "x"]
    assert len(curves["rank"]) == 2


def test_progress_frame_one_row_per_run() -> None:
    labelled = replace(row("rank", 1, "running", 25), label="rank · α 0.7 · β 0 · seed 1 · abc123")
    frame = progress_frame([labelled, row("rank", 0), row("uniform", 0)])
    assert frame["run"].tolist() == [
        "uniform · seed 0",
        "rank · seed 0",
        "rank · α 0.7 · β 0 · seed 1 · abc123",
    ]
    assert frame["scheme"].tolist() == ["uniform", "rank", "rank"]
    assert frame["progress"].tolist() == [50, 50, 25]  # percent
    assert frame["return (last 20)"].tolist() == [15.0, 15.0, 15.0]
    assert frame["error"].tolist() == ["", "", ""]


def test_final_return_is_the_mean_of_the_last_episodes() -> None:
    assert final_return(np.arange(30.0)) == pytest.approx(np.mean(np.arange(10.0, 30.0)))
    assert math.isnan(final_return([]))


def test_runs_table_keeps_order_and_names_columns(store: RunStore) -> None:
    older, newer = stored_run(store, "uniform"), stored_run(store, "rank", 1)
    table = runs_table(store.list_runs())
    assert table["id"].tolist() == [newer, older]
    assert table.columns.tolist() == [
        "run",
        "name",
        "status",
        "preset",
        "env",
        "env steps",
        "episodes",
        "created",
        "id",
        "scheme",
    ]
    assert table["run"].tolist() == [
        f"rank · α 0.6 · β₀ 0.4 · seed 1 · {newer[:6]}",
        f"uniform · seed 0 · {older[:6]}",
    ]
    assert table["scheme"].tolist() == ["rank", "uniform"]
    assert runs_table(store.list_runs(status="finished")).empty


def test_scheme_labels_take_each_schemes_settings() -> None:
    rows = [
        replace(row("rank", 0), settings="rank · α 0.7 · β 0"),
        replace(row("rank", 1), settings="rank · α 0.7 · β 0"),
        row("uniform", 0),
    ]
    assert scheme_labels(rows) == {"rank": "rank · α 0.7 · β 0", "uniform": "uniform"}


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (None, "n/a"),
        (512, "512 B"),
        (1536, "1.5 KiB"),
        (18_440, "18.0 KiB"),
        (3 * 2**30, "3.0 GiB"),
    ],
)
def test_format_bytes(count: int | None, text: str) -> None:
    assert format_bytes(count) == text


def test_manifest_summary_picks_the_reproduction_facts() -> None:
    manifest = {
        "seed": 4,
        "device": "cpu",
        "dtype": "float32",
        "inputs": {"obs_shape": [4], "batch_obs_shape": [32, 1, 4], "n_actions": 2},
        "environment": {
            "versions": {"python": "3.11.7", "torch": "2.13.0", "numba": None},
            "torch_device_name": "x86_64",
            "torch_num_threads": 1,
            "source_revision": "abc123+dirty",
        },
        "counters": {"env_steps": 2000, "updates": 84, "replay_bytes": 1_104_288},
    }
    summary = manifest_summary(manifest)
    assert summary["versions"] == "python 3.11.7, torch 2.13.0"
    assert summary["device"] == "cpu (x86_64), float32, 1 thread(s)"
    assert summary["seed"] == "4"
    assert summary["observation shape"] == "4"
    assert summary["batch shape"].startswith("32 × 1 × 4")
    assert summary["counters"] == "2,000 env steps, 84 updates, 1.1 MiB replay"
    assert summary["source revision"] == "abc123+dirty"
    assert manifest_summary({})["source revision"] == "unknown"
