"""Eight paused runs plus one more: the memory cap on paused runs at
its default (``RDQN_MAX_PAUSED``, 8), in threads.

A paused run keeps its replay memory, so the registry holds at most 8 paused; pausing a ninth
stops the one paused longest, with the reason, resumable from where it paused. Pausing again
makes a run the newest paused; a resumed run left the count. The owner's live page says why its
run stopped and offers Resume, which goes on under the same id from the same step.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rdqn.runs.resume import resumable
from rdqn.runs.store import RunStore
from rdqn.serve.handle import RunHandle
from rdqn.serve.registry import RunRegistry
from tests.app.conftest import isolated_app  # noqa: F401 - autouse: private RDQN_HOME, threads
from tests.run_helpers import tiny, wait_for

APP = str(Path(__file__).resolve().parents[2] / "app.py")
SLOW = 200.0  # steps/s: the runs barely use the cores while the test pauses them one by one


def reason(paused: int) -> str:
    return (
        f"stopped to free memory: {paused} runs were paused on this server (limit 8); resume "
        "it to go on where it paused"
    )


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[RunRegistry]:
    registry = RunRegistry(RunStore(tmp_path / "rdqn.db"), max_active=1)  # max_paused: default
    yield registry
    registry.shutdown()


def paused_run(registry: RunRegistry, owner: str) -> RunHandle:
    """A run that trained a few steps (it has something to lose), then paused by its owner."""
    handle = registry.start(tiny(100_000), owner=owner, speed=SLOW)
    wait_for(lambda: handle.snapshot() is not None and handle.snapshot().env_steps > 0, 60)
    registry.pause(handle.id, owner=owner)
    wait_for(lambda: handle.status == "paused", 30)
    return handle


@pytest.mark.slow  # nine runs train, one is resumed and trains on: seconds
def test_pausing_a_ninth_stops_the_one_paused_longest_resumable(registry: RunRegistry) -> None:
    assert registry.max_paused == 8
    runs = [paused_run(registry, f"owner-{k}") for k in range(8)]
    assert [h.status for h in runs] == ["paused"] * 8  # at the cap, nothing stops

    runs.append(paused_run(registry, "owner-8"))
    first = runs[0]
    wait_for(lambda: first.status == "stopped", 30)
    assert first.error == reason(9)
    assert [h.status for h in runs[1:]] == ["paused"] * 8
    assert resumable(registry.store, first.id)
    steps = registry.store.get_run(first.id).env_steps
    assert steps > 0

    # Pausing again makes a run the newest paused: the 2nd run, unpaused and paused, is not the
    # one stopped by the next pause, the 3rd is.
    second, third = runs[1], runs[2]
    registry.unpause(second.id, owner="owner-1")
    wait_for(lambda: second.status == "running", 30)
    registry.pause(second.id, owner="owner-1")
    wait_for(lambda: second.status == "paused", 30)
    assert third.status == "paused" and second.status == "paused"  # 8 paused: the cap

    resumed = registry.resume(first.id, owner="owner-0", speed=SLOW)
    assert resumed.id == first.id
    wait_for(lambda: resumed.snapshot() is not None and resumed.snapshot().env_steps > steps, 60)
    registry.pause(first.id, owner="owner-0")  # the 9th paused again
    wait_for(lambda: third.status == "stopped", 30)
    assert third.error == reason(9)
    # `status` is what the worker last reported: the resumed run's pause may come in after.
    wait_for(lambda: resumed.status == "paused", 30)
    assert second.status == "paused"


@pytest.mark.slow  # trains at 100 steps/s until the cap stops it
def test_the_owners_page_says_why_its_run_stopped_and_resumes_it() -> None:
    from rdqn.dashboard.state import registry

    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/live.py").run()
    at.session_state["live.overrides"] = {
        "train.total_steps": 100_000,
        "train.learning_starts": 32,
        "replay.capacity": 256,
        "replay.batch_size": 16,
    }
    at.session_state["live.speed"] = "100 steps/s"
    at.button(key="live.start").click().run()
    mine = registry().get(at.session_state["live.run_id"])
    wait_for(lambda: mine.snapshot() is not None and mine.snapshot().env_steps > 0, 60)
    at.run()
    at.button(key="live.pause").click().run()
    wait_for(lambda: mine.status == "paused", 30)
    assert registry().max_paused == 8  # RDQN_MAX_PAUSED unset: the default

    others = [paused_run(registry(), f"another-browser-{k}") for k in range(8)]
    wait_for(lambda: mine.status == "stopped", 30)
    assert [h.status for h in others] == ["paused"] * 8
    steps = registry().store.get_run(mine.id).env_steps

    at.run()
    assert not at.exception
    assert at.get("progress")[0].proto.text.startswith("stopped · run")
    assert [w.value.replace("\\", "") for w in at.warning] == [
        "The run stopped: to free memory: 9 runs were paused on this server (limit 8); resume "
        "it to go on where it paused. Press **Resume** to go on where it stopped."
    ]  # it read "The run stopped: stopped to free memory: ..."
    resume = at.button(key="live.start")
    assert resume.label == "Resume" and not resume.disabled

    resume.click().run()
    assert not at.exception and at.session_state["live.run_id"] == mine.id
    handle = registry().get(mine.id)
    assert handle is not mine  # a new handle, the same run
    wait_for(lambda: handle.snapshot() is not None and handle.snapshot().env_steps > steps, 60)
    assert handle.status == "running"
