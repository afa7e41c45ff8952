"""AppTests of Memories replayed (Replay internals) and of a memory on One update by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from rdqn.dashboard.memories_panel import BY_HAND_MEMORY
from rdqn.dashboard.memories_view import chosen_memory
from rdqn.dashboard.state import registry
from rdqn.training.memories import memories
from rdqn.training.trainer import Trainer
from tests.run_helpers import tiny, wait_for

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_the_explorer_lists_the_runs_own_memories() -> None:
    handle = registry().start(tiny(50_000), owner="test-memories")
    try:
        wait_for(lambda: (s := handle.snapshot()) is not None and s.updates > 40, 60, every=0.1)
        handle.pause()
        wait_for(lambda: handle.status == "paused", 30)
        # The page waits a moment for the run's first view; a loaded machine can take longer.
        wait_for(lambda: handle.first_memories(1.0) is not None, 60, what="no memory view")
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        at.session_state["live.run_id"] = handle.id
        at.switch_page("pages/internals.py").run()
        assert not at.exception
        assert any(s.value == "Memories replayed" for s in at.subheader)
        view = handle.memories
        assert view is not None and view.env_steps == handle.snapshot().env_steps
        (table, *_) = at.dataframe
        assert table.value["slot"].tolist() == view.lists["last batch"].slots.tolist()
        np.testing.assert_array_equal(
            table.value["probability"], view.lists["last batch"].probabilities
        )
        at.segmented_control(key="internals.memory_list").set_value("top priority").run()
        (table, *_) = at.dataframe
        assert table.value["slot"].tolist() == view.lists["top priority"].slots.tolist()
    finally:
        registry().stop(handle.id)


def test_a_memory_is_worked_by_hand_with_its_own_numbers() -> None:
    trainer = Trainer(tiny(300))
    while not trainer.done:
        trainer.step()
    memory = chosen_memory(memories(trainer), "run-7", "top priority", 0)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.session_state[BY_HAND_MEMORY] = memory
    at.switch_page("pages/by_hand.py").run()
    assert not at.exception
    assert any("A memory from run `run-7`" in m.value for m in at.markdown)
    numbers = at.dataframe[0].value.iloc[0]
    assert numbers["δᵢ"] == memory.td_error and numbers["P(i)"] == memory.probability
    assert numbers["wᵢ"] == memory.weight and numbers["yᵢ"] == memory.target
    assert any(f"{memory.td_error:.4f}"[:6] in tex.value for tex in at.latex)
    at.button(key="hand.forget_memory").click().run()
    assert at.session_state[BY_HAND_MEMORY] is None
    assert not any("A memory from run" in m.value for m in at.markdown)


def test_a_sequence_replays_explorer_lists_its_sequences_and_their_steps() -> None:
    """A run replaying R2D2's sequences: the panel lists its sequences with the run's numbers
    and draws each one's steps (was: "Asking the run for its replay memory…" for ever)."""
    config = tiny(50_000).with_overrides(
        {
            "env.id": "rdqn/MaskedCartPole-v0",
            "agent.network": "recurrent",
            "replay.mode": "sequences",
            "replay.sequence_length": 8,
            "replay.sequence_overlap": 4,
            "replay.burn_in": 2,
            "replay.batch_size": 4,
        }  # fmt: skip
    )
    handle = registry().start(config, owner="test-sequences")
    try:
        wait_for(lambda: (s := handle.snapshot()) is not None and s.updates > 20, 60, every=0.1)
        handle.pause()
        wait_for(lambda: handle.status == "paused", 30)
        # The page waits a moment for the run's first view; a loaded machine can take longer.
        wait_for(lambda: handle.first_memories(1.0) is not None, 60, what="no memory view")
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        at.session_state["live.run_id"] = handle.id
        at.switch_page("pages/internals.py").run()
        assert not at.exception
        view = handle.memories
        assert view is not None and view.env_steps == handle.snapshot().env_steps
        assert any(f"{view.size:,} sequences of up to 8 steps" in c.value for c in at.caption)
        (table, *_) = at.dataframe
        rows = view.lists["last batch"]
        assert table.value["slot"].tolist() == rows.slots.tolist()
        np.testing.assert_array_equal(table.value["td_abs"], rows.mixed)
        at.segmented_control(key="internals.sequence_list").set_value("top priority").run()
        (table, *_) = at.dataframe
        assert table.value["slot"].tolist() == view.lists["top priority"].slots.tolist()
        charts = [str(chart.proto.spec) for chart in at.get("plotly_chart")]
        assert any("|δₜ| by the current networks" in spec for spec in charts)
        # The page's other charts replay sequences too, and say so.
        notes = [c.value for c in at.caption if c.value.startswith("**What to look for:**")]
        assert any("One dot per replayed sequence" in note for note in notes), notes
        assert not any("transition" in note for note in notes), notes
        snapshot = handle.snapshot()  # N in the batch's N·P(i): live sequences, not steps
        assert (snapshot.items, snapshot.item) == (view.size, "sequence") and view.size < view.steps
    finally:
        registry().stop(handle.id)
