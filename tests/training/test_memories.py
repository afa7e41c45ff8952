"""rdqn.training.memories: the explorer's numbers are the replay memory's own, and reading
them changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from rdqn.presets import preset
from rdqn.training.memories import LISTED, memories
from rdqn.training.trainer import Trainer
from tests.run_helpers import tiny


@pytest.fixture(scope="module")
def trained() -> Trainer:
    trainer = Trainer(tiny(600, **{"replay.capacity": 300}))
    while not trainer.done:
        trainer.step()
    return trainer


def test_every_number_is_the_memorys_own(trained: Trainer) -> None:
    buffer = trained.buffer
    view = memories(trained, points=100)
    assert view is not None and view.size == len(buffer) == 300
    assert len(view.drawn) == 100 and view.pose_names == ("cart position", "pole angle")
    for rows in (view.drawn, *view.lists.values()):
        slots = rows.slots
        np.testing.assert_array_equal(rows.probabilities, buffer.probabilities()[slots])
        np.testing.assert_array_equal(rows.weights, buffer.importance_weights(slots, trained.beta))
        np.testing.assert_array_equal(rows.replayed, buffer.sample_counts[slots])
        np.testing.assert_array_equal(rows.ages, buffer.ages(slots))
        np.testing.assert_array_equal(rows.poses, buffer.storage.obs[slots][:, [0, 2]])
        np.testing.assert_array_equal(rows.actions, buffer.storage.actions[slots])
    assert set(view.lists) == {"last batch", "top priority", "uniform sample"}
    assert all(set(rows.slots) <= set(view.drawn.slots) for rows in view.lists.values())
    last = trained.recorder.last_batch
    assert view.lists["last batch"].slots.tolist() == last.indices[:LISTED].tolist()
    top = view.lists["top priority"].probabilities
    assert top.min() >= np.sort(buffer.probabilities())[-LISTED]


def test_a_replayed_memorys_priority_is_its_last_td_error_plus_eps(trained: Trainer) -> None:
    """The last batch's priorities were just set: p = |δ| + eps, read back through the tree."""
    view = memories(trained)
    last = trained.recorder.last_batch
    rows = view.lists["last batch"]
    eps = trained.config.replay.eps
    last_seen = {int(s): k for k, s in enumerate(last.indices)}  # duplicates: the last one wins
    for slot, p in zip(rows.slots, rows.priorities, strict=True):
        assert p == pytest.approx(last.td_abs[last_seen[int(slot)]] + eps, rel=1e-9)


def test_the_td_terms_add_up(trained: Trainer) -> None:
    view = memories(trained)
    gamma = trained.config.agent.gamma
    for name, rows in view.lists.items():
        terms = view.terms[name]
        np.testing.assert_allclose(terms["td_error"], terms["target"] - terms["q_taken"])
        np.testing.assert_allclose(
            terms["target"], rows.rewards + gamma * (~rows.terminated) * terms["next_value"]
        )


def test_reading_the_memory_changes_nothing(trained: Trainer) -> None:
    buffer = trained.buffer
    counts, rng = buffer.sample_counts, buffer.rng.bit_generator.state
    probabilities = buffer.probabilities()
    memories(trained)
    np.testing.assert_array_equal(buffer.sample_counts, counts)
    np.testing.assert_array_equal(buffer.probabilities(), probabilities)
    assert buffer.rng.bit_generator.state == rng


@pytest.mark.parametrize("scheme", ["rank", "uniform"])
def test_other_schemes(scheme: str) -> None:
    trainer = Trainer(tiny(200, **{"replay.scheme": scheme}))
    assert memories(trainer) is None  # nothing stored yet
    while not trainer.done:
        trainer.step()
    view = memories(trainer)
    assert view.scheme == scheme
    if scheme == "uniform":
        assert "top priority" not in view.lists and np.isnan(view.drawn.priorities).all()
        assert (view.drawn.weights == 1.0).all()
    else:
        assert (view.drawn.priorities >= 0).all()
    assert view.expected_replays.shape == view.expected_ages.shape


@pytest.fixture(scope="module")
def sequences() -> Trainer:
    config = preset("e14-lesson").with_overrides(
        {
            "replay.mode": "sequences",
            "replay.sequence_length": 8,
            "replay.sequence_overlap": 4,
            "replay.burn_in": 2,
            "replay.batch_size": 4,
            "replay.capacity": 200,
            "train.total_steps": 400,
            "train.learning_starts": 40,
        }  # fmt: skip
    )
    trainer = Trainer(config)
    while not trainer.done:
        trainer.step()
    return trainer


def test_a_sequence_replays_rows_are_its_sequences_own(sequences: Trainer) -> None:
    """P(i), w_i, ages and p are the replay's; the learned steps are those after the burn-in
    (none for a sequence that begins its episode), up to its length; the mixed |δ| is η max +
    (1 - η) mean of them; a replayed sequence's p is that mix + eps from its last update."""
    replay = sequences.buffer
    view = memories(sequences)
    assert view is not None and view.size == len(replay) and view.steps == replay.steps
    assert set(view.lists) == {"last batch", "top priority", "uniform sample"}
    eta, eps = replay.priority_eta, sequences.config.replay.eps
    for rows in view.lists.values():
        slots = rows.slots
        np.testing.assert_array_equal(rows.probabilities, replay.probabilities()[slots])
        np.testing.assert_array_equal(rows.weights, replay.importance_weights(slots, view.beta))
        np.testing.assert_array_equal(rows.ages, replay.ages(slots))
        np.testing.assert_array_equal(rows.burn_ins, np.where(rows.starts_episode, 0, 2))
        for k in range(len(rows)):
            learned = ~np.isnan(rows.td_abs[k])
            assert np.flatnonzero(learned).tolist() == list(
                range(rows.burn_ins[k], rows.lengths[k])
            )
            values = rows.td_abs[k][learned]
            assert rows.mixed[k] == pytest.approx(eta * values.max() + (1 - eta) * values.mean())
    top = view.lists["top priority"].probabilities
    assert top.min() >= np.sort(replay.probabilities()[replay.index.live_slots()])[-LISTED]
    # The last batch was just given its priorities by these very networks' |δ| (the target
    # net moved by one soft update since: close, not equal).
    last = view.lists["last batch"]
    np.testing.assert_allclose(last.priorities, last.mixed + eps, rtol=0.05)


def test_reading_a_sequence_replay_changes_nothing(sequences: Trainer) -> None:
    replay = sequences.buffer
    counts, probabilities = replay.sample_counts, replay.probabilities()
    state = replay.rng.bit_generator.state
    memories(sequences)
    np.testing.assert_array_equal(replay.sample_counts, counts)
    np.testing.assert_array_equal(replay.probabilities(), probabilities)
    assert replay.rng.bit_generator.state == state


def test_the_last_batch_lists_only_the_memories_it_drew_not_those_written_over_them() -> None:
    """Between two updates the ring goes on writing: a slot of the last batch that a new
    transition took holds a memory the batch never drew, and is left out of its list."""
    trainer = Trainer(tiny(2_000, **{"replay.capacity": 64, "train.train_every": 4}))
    while not trainer.done:
        trainer.step()
        last, storage = trainer.recorder.last_batch, trainer.buffer.storage
        next_slot = storage.writes % storage.capacity
        if last is None or trainer.updates == 0 or next_slot not in last.indices:
            continue
        if trainer.env_steps % 4 == 3:
            continue  # the next step updates again: nothing is left to see
        trainer.step()  # writes over a slot the last batch drew, with no update
        assert trainer.recorder.last_batch is last
        listed = memories(trainer).lists["last batch"].slots.tolist()
        assert next_slot not in listed
        assert listed == [int(s) for s in last.indices if s != next_slot][:LISTED]
        return
    pytest.fail("no update drew the slot the ring wrote next")
