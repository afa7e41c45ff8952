"""rdqn.runs.control: a run serves its watchers (a greedy episode, the memory view) between two
steps, paused or not, and leaves what an ended run is watched by in its last snapshot."""

from __future__ import annotations

import threading

import pytest

from rdqn.runs.control import MEMORIES, PLAY, RunControls, drive
from rdqn.runs.lifecycle import RecordedRun
from rdqn.runs.store import RunStore
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
