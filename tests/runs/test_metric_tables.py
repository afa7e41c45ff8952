"""`rdqn.runs.metric_tables`: metric rows as DataFrames with numeric dtypes."""

import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np

from rdqn.runs.metric_tables import read_metric_frame
from rdqn.runs.schema import EPISODE_COLUMNS, STEP_COLUMNS
from rdqn.runs.store import RunStore


def _store_with_rows(tmp_path: Path) -> tuple[RunStore, str]:
    store = RunStore(tmp_path / "rdqn.db")
    run_id = store.create_run(config={}, env_id="CartPole-v1", scheme="uniform", seed=0)
    store.write_metrics(
        run_id,
        episodes=[{"episode": 2, "env_steps": 30, "return": 20.0}, {"episode": 1, "env_steps": 10}],
        steps=[{"updates": 1}],
    )
    return store, run_id


def test_rows_come_ordered_by_key_with_numeric_dtypes(tmp_path: Path) -> None:
    store, run_id = _store_with_rows(tmp_path)
    store.close()
    with closing(sqlite3.connect(tmp_path / "rdqn.db")) as conn:
        episodes = read_metric_frame(conn, run_id, "episodes", EPISODE_COLUMNS)
        later = read_metric_frame(conn, run_id, "episodes", EPISODE_COLUMNS, after=1)
        steps = read_metric_frame(conn, run_id, "steps", STEP_COLUMNS)
    assert list(episodes.columns) == [name for name, _ in EPISODE_COLUMNS]
    assert episodes["episode"].tolist() == [1, 2]
    assert str(episodes["episode"].dtype) == "int64"
    assert str(episodes["return"].dtype) == "float64"
    assert episodes["return"].isna().tolist() == [True, False]
    assert str(episodes["length"].dtype) == "Int64"  # integers, one missing
    assert episodes["length"].isna().all()
    assert later["episode"].tolist() == [2]
    # an all-NULL float column is float64 (NaN), not object
    float_columns = [name for name, convert in STEP_COLUMNS if convert is float]
    assert all(str(steps[name].dtype) == "float64" for name in float_columns)


def test_a_run_without_rows_gives_the_columns_and_no_row(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "rdqn.db")
    run_id = store.create_run(config={}, env_id="CartPole-v1", scheme="uniform", seed=0)
    store.close()
    with closing(sqlite3.connect(tmp_path / "rdqn.db")) as conn:
        frame = read_metric_frame(conn, run_id, "steps", STEP_COLUMNS)
    assert frame.empty
    assert list(frame.columns) == [name for name, _ in STEP_COLUMNS]


def test_greedy_rows_are_rewound_past_a_resume_point_and_deleted_with_their_run(
    tmp_path: Path,
) -> None:
    from rdqn.runs.status import record_status
    from rdqn.training.episodes import PlayedEpisode

    store, run_id = _store_with_rows(tmp_path)
    poses = np.zeros((3, 2), np.float32)
    later = PlayedEpisode("CartPole-v1", 60, 7, poses, np.int8([0, 1]), np.float32([1, 1]), True)
    rows = [
        {"played": k, "env_steps": s, "return": 1.0, "length": 2} for k, s in enumerate((0, 30, 60))
    ]
    store.write_metrics(run_id, greedy=rows, watched=later)
    assert store.metrics.greedy_returns(run_id).env_steps.tolist() == [0, 30, 60]
    assert store.metrics.watched_episode(run_id).seed == 7
    store.set_status(run_id, "stopped")
    assert record_status(store, run_id, "running", rewind=(30, 1, 1))
    assert store.metrics.greedy_returns(run_id).env_steps.tolist() == [0, 30]
    assert (
        store.metrics.watched_episode(run_id) is None
    )  # played by the policy of step 60, now gone
    store.delete_run(run_id)
    with closing(sqlite3.connect(store.path)) as raw:
        assert raw.execute("SELECT COUNT(*) FROM greedy").fetchone()[0] == 0
        assert raw.execute("SELECT COUNT(*) FROM watched").fetchone()[0] == 0
    store.close()
