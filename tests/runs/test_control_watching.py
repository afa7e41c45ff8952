"""rdqn.runs.control: a run serves its watchers (a greedy episode, the memory view) between two
steps, paused or not, and leaves what an ended run is watched by in its last snapshot."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from rdqn.runs.control import MEMORIES, PLAY, RunControls, drive
from rdqn.runs.lifecycle import RecordedRun
from rdqn.runs.resume import resume_point
from rdqn.runs.store import RunStore
from rdqn.training.watcher import EpisodeWatcher, watch_seed
from tests.run_helpers import tiny, wait_for


def test_requests_are_coalesced_and_checked() -> None:
    controls = RunControls(paused=True)
    controls.request(PLAY)
    controls.request(PLAY)
    controls.request(MEMORIES)
    assert controls.next_action(paused_recorded=True) == "serve"
    assert controls.take_requests() == {PLAY, MEMORIES} and controls.take_requests() == set()
    with pytest.raises(ValueError, match="a run serves 'play' or 'memories', got 'dance'"):
        controls.request("dance")


def test_a_paused_run_plays_and_shows_its_memory_then_ends_watchable(tmp_path) -> None:  # noqa: ANN001
    snapshots = []
    controls = RunControls()
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(tiny(300), store)
        thread = threading.Thread(target=drive, args=(run, controls, snapshots.append))
        thread.start()
        first = wait_for(lambda: snapshots and snapshots[0], what="no first snapshot")
        assert first.played is not None and first.played.env_steps == 0  # the untrained policy
        assert first.memories is None
        controls.pause()
        wait_for(lambda: snapshots[-1].status == "paused", what="not paused")
        steps = snapshots[-1].env_steps
        controls.request(PLAY)
        controls.request(MEMORIES)
        served = wait_for(
            lambda: next((s for s in reversed(snapshots) if s.memories is not None), None),
            what="no memory view",
        )
        assert served.env_steps == steps and served.status == "paused"
        assert served.memories.env_steps == steps and len(served.greedy) >= 2
        assert served.played.env_steps == steps
        later = len(snapshots)
        controls.resume()
        thread.join(60)
        assert not thread.is_alive()
        last = snapshots[-1]
        assert last.status == "finished" and last.env_steps == 300
        assert last.played.env_steps == 300 and last.memories.env_steps == 300
        assert all(s.memories is None for s in snapshots[later:-1])  # sent once, not each time
        # The store keeps what an ended run is watched by, for after a restart.
        kept = store.metrics.greedy_returns(run.id)
        assert kept.env_steps.tolist() == last.greedy.env_steps.tolist()
        assert kept.returns.tolist() == last.greedy.returns.tolist()
        watched = store.metrics.watched_episode(run.id)
        assert watched.seed == last.played.seed and watched.env_steps == 300
        np.testing.assert_array_equal(watched.poses, last.played.poses)


def test_a_resumed_run_goes_on_from_the_greedy_episodes_kept_up_to_its_resume_point(
    tmp_path: Path,
) -> None:
    """Episodes played after the resume checkpoint are dropped with the run's other rows there
    (a crash lost that policy); the resumed run's watcher goes on numbering (and seeding) its
    episodes after those kept."""
    config = tiny(400)
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(config, store)
        trainer = run.open()
        watcher = EpisodeWatcher(trainer, on_played=run.record_played)
        watcher.play_now()
        trainer.run(steps=100)
        watcher.play_now()
        assert run.save_resume_point()
        trainer.run(steps=50)
        lost = watcher.play_now()
        assert store.metrics.greedy_returns(run.id).env_steps.tolist() == [0, 100, 150]
        assert store.metrics.watched_episode(run.id).seed == lost.seed  # written at once
    with RunStore(tmp_path / "rdqn.db") as store:  # the process died; a new server starts
        assert store.mark_interrupted() == 1
        point = resume_point(store, run.id)
        resumed = RecordedRun(point.config, store, resume=point)
        resumed.open()
        assert store.metrics.greedy_returns(run.id).env_steps.tolist() == [0, 100]
        assert store.metrics.watched_episode(run.id) is None  # the one kept was played at step 150
        again = EpisodeWatcher(
            resumed.trainer, earlier=resumed.greedy_so_far, on_played=resumed.record_played
        )
        assert again.played == 2 and again.curve.snapshot().env_steps.tolist() == [0, 100]
        episode = again.play_now()
        assert episode.seed == watch_seed(config.seed, 2) == lost.seed  # its number is free again
        assert store.metrics.greedy_returns(run.id).env_steps.tolist() == [0, 100, 100]
        assert store.metrics.watched_episode(run.id).seed == episode.seed
        resumed.close("stopped")
    trainer.close()
