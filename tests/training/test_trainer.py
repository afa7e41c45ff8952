"""Tests for rdqn.training.trainer: counters, schedules, reproducibility, divergence, telemetry."""

from __future__ import annotations

import copy
import io
import json
import re
from collections.abc import Callable

import numpy as np
import pytest
import torch

from rdqn.config import RunConfig
from rdqn.learn.agent import DivergenceError
from rdqn.presets import PRESETS, preset
from rdqn.runs.manifest import manifest_of
from rdqn.training.memories import memories
from rdqn.training.memory_view import SequenceMemories
from rdqn.training.trainer import Trainer


def tiny(name: str = "per-notebook", **overrides: object) -> RunConfig:
    """A preset shrunk to run in a fraction of a second."""
    base = {
        "train.total_steps": 300,
        "train.learning_starts": 64,
        "replay.capacity": 256,
        "replay.batch_size": 16,
        "train.histogram_every": 20,
    }
    base.update(overrides)
    return preset(name).with_overrides(base)


class ListSink:
    def __init__(self) -> None:
        self.episodes: list[dict] = []
        self.steps: list[dict] = []

    def add_episode(self, **row: object) -> None:
        self.episodes.append(row)

    def add_step(self, **row: object) -> None:
        self.steps.append(row)


@pytest.mark.slow  # trains or starts a process for seconds
@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_runs_a_few_hundred_steps(name: str) -> None:
    config = tiny(name)
    trainer = Trainer(config)
    trainer.run()
    assert trainer.status == "finished"
    assert trainer.env_steps == 300
    updates = (300 - 64) // config.train.train_every  # e14-lesson updates every 2nd step
    assert trainer.updates == updates
    snap = trainer.snapshot()
    assert snap.env_steps == 300 and snap.updates == updates and snap.progress == 1.0
    assert snap.priorities is not None and snap.priorities.counts.sum() == 256
    trainer.close()


def test_counters_are_kept_separately_and_match_the_sink() -> None:
    sink = ListSink()
    trainer = Trainer(tiny(**{"train.train_every": 2, "train.log_every": 5}), sink=sink)
    trainer.run()
    assert trainer.updates == (300 - 64) // 2
    assert trainer.episodes == len(sink.episodes) == len(trainer.recorder.episode_returns)
    assert sum(row["length"] for row in sink.episodes) <= trainer.env_steps
    assert [row["updates"] for row in sink.steps] == list(range(5, trainer.updates + 1, 5))
    # CartPole pays 1 per step, so each return equals the episode length.
    assert all(row["return"] == row["length"] for row in sink.episodes)


def test_schedules_anneal_beta_to_one_and_epsilon_to_its_floor() -> None:
    trainer = Trainer(tiny())
    assert trainer.beta == pytest.approx(0.4) and trainer.epsilon == 1.0
    trainer.run()
    assert trainer.beta == pytest.approx(1.0)
    assert trainer.epsilon == pytest.approx(trainer.config.train.epsilon_end)


@pytest.mark.parametrize(("learning_starts", "train_every"), [(64, 1), (65, 3), (64, 4)])
def test_beta_is_beta0_at_the_first_update_and_beta_end_at_the_last(
    learning_starts: int, train_every: int
) -> None:
    """Every update samples with beta(u) = beta0 + (beta_end - beta0) * u / (U - 1), u = 0..U-1,
    where U = planned_updates is the exact number of updates the budget gives."""
    config = tiny(
        **{
            "train.learning_starts": learning_starts,
            "train.train_every": train_every,
            "replay.beta0": 0.4,
            "replay.beta_end": 1.0,
        }
    )
    trainer = Trainer(config)
    betas: list[float] = []
    sample = trainer.buffer.sample

    def recording_sample(batch_size: int, *, beta: float) -> object:
        betas.append(beta)
        return sample(batch_size, beta=beta)

    trainer.buffer.sample = recording_sample  # type: ignore[method-assign]
    trainer.run()
    planned = config.train.planned_updates
    assert trainer.updates == planned == len(betas)
    assert betas[0] == 0.4 and betas[-1] == 1.0  # exactly, not 1 - 0.6 / U
    expected = 0.4 + 0.6 * np.arange(planned) / (planned - 1)
    np.testing.assert_allclose(betas, expected, rtol=0, atol=1e-12)
    trainer.close()


def test_same_seed_same_returns_and_losses() -> None:
    first, second = Trainer(tiny(seed=3)), Trainer(tiny(seed=3))
    first.run()
    second.run()
    np.testing.assert_array_equal(first.recorder.episode_returns, second.recorder.episode_returns)
    np.testing.assert_array_equal(first.snapshot().losses, second.snapshot().losses)
    third = Trainer(tiny(seed=4)).run()
    assert not np.array_equal(third.snapshot().losses, first.snapshot().losses)


def _acted_and_replayed(**overrides: object) -> tuple[Trainer, dict[int, np.ndarray]]:
    """A short e14 run (T = 4) that records each window the agent acted on, by generation."""
    trainer = Trainer(tiny("e14", **{"replay.window": 4, **overrides}))
    acted: dict[int, np.ndarray] = {}
    act = trainer.agent.act

    def recording_act(window: np.ndarray, epsilon: float, mask: np.ndarray) -> int:
        acted[trainer.buffer.storage.writes] = window.copy()
        return act(window, epsilon, mask)

    trainer.agent.act = recording_act  # type: ignore[method-assign]
    trainer.run()
    return trainer, acted


@pytest.mark.slow  # trains or starts a process for seconds
def test_the_window_acted_on_is_the_window_replayed() -> None:
    trainer, acted = _acted_and_replayed(**{"train.total_steps": 150})
    slots = np.arange(len(trainer.buffer))
    windows, _, _, _ = trainer.buffer.storage.windows(slots, 4)
    generations = trainer.buffer.storage.generation[slots]
    for window, generation in zip(windows, generations, strict=True):
        np.testing.assert_array_equal(window, acted[int(generation)])


@pytest.mark.slow  # a recurrent e14 run, every window it acted on recorded
def test_after_the_ring_wraps_only_overwritten_predecessors_are_zero_padded() -> None:
    """The exact rule where windows meet the ring (docs/design.md, "Windows"): the replayed W_t of
    the occupant of generation g (episode step t) equals the acted W_t with positions p < T - 1 - k
    zeroed (mask False), k = min(t, T - 1, g - oldest stored generation); those positions held
    frames the ring has since overwritten. Every other window is bit for bit the acted one."""
    window = 4
    trainer, acted = _acted_and_replayed(
        **{"train.total_steps": 300, "replay.capacity": 64, "replay.batch_size": 16}
    )
    storage = trainer.buffer.storage
    assert storage.writes > storage.capacity  # the ring wrapped several times
    slots = np.arange(len(trainer.buffer))
    windows, _, masks, _ = storage.windows(slots, window)
    padded = 0
    for slot, replayed, mask in zip(slots, windows, masks, strict=True):
        generation = int(storage.generation[slot])
        stored_before = generation - storage.oldest_generation
        lookback = min(int(storage.episode_step[slot]), window - 1, stored_before)
        expected = acted[generation].copy()
        expected[: window - 1 - lookback] = 0
        np.testing.assert_array_equal(replayed, expected)
        np.testing.assert_array_equal(mask, np.arange(window) >= window - 1 - lookback)
        padded += int(not np.array_equal(replayed, acted[generation]))
    assert padded > 0  # the oldest rows' acted windows did read overwritten frames


def test_divergence_stops_the_run_and_keeps_what_was_recorded() -> None:
    trainer = Trainer(tiny())
    trainer.run(150)
    episodes_before = len(trainer.recorder.episode_returns)
    with torch.no_grad():
        for parameter in trainer.agent.online.parameters():
            parameter.fill_(float("nan"))
    with pytest.raises(DivergenceError, match="non-finite"):
        trainer.run()
    assert trainer.status == "failed" and "non-finite" in (trainer.error or "")
    assert not trainer.done  # its budget is not spent: whoever drives it must not say finished
    assert len(trainer.recorder.episode_returns) >= episodes_before
    snap = trainer.snapshot()
    assert snap.status == "failed" and snap.error == trainer.error
    with pytest.raises(RuntimeError, match="the run is over"):
        trainer.step()


def test_snapshot_is_a_private_copy() -> None:
    trainer = Trainer(tiny())
    trainer.run(200)
    snap = trainer.snapshot()
    returns = snap.episode_returns.copy()
    trainer.run()
    np.testing.assert_array_equal(snap.episode_returns, returns)
    assert snap.env_steps == 200


def test_snapshot_replay_internals() -> None:
    trainer = Trainer(tiny())
    trainer.run()
    snap = trainer.snapshot()
    batch = snap.last_batch
    assert batch is not None and batch.indices.shape == (16,)
    assert 1.0 <= batch.ess <= 16.0
    assert snap.fit is not None and 0.0 <= snap.fit.p_value <= 1.0
    assert snap.fit.observed.sum() == pytest.approx(snap.fit.expected.sum())
    assert [len(level) for level in snap.tree_levels] == [1, 2, 4, 8, 16]
    assert snap.tree_levels[0][0] == pytest.approx(trainer.buffer.sampler.tree.total)
    assert snap.priority_history.counts.shape == (len(snap.priority_history.steps), 40)
    assert snap.weight_history.counts.sum() > 0
    assert snap.age_counts is not None and snap.age_counts.counts.sum() == 16 * trainer.updates
    assert set(snap.td_stages) == {"10%", "25%", "50%", "100%"}
    for name in ("init", "act", "env", "sample", "update"):
        assert snap.timings[name] > 0


def test_a_sequence_runs_snapshot_counts_sequences_and_its_trees_slots() -> None:
    """N in N·P(i) is the live sequences the sampler draws from, and the tree's slots are the
    sequence slots, not the steps stored (the Replay internals and Sum tree pages read them)."""
    trainer = Trainer(tiny("e14", **{**SEQUENCES, "replay.scheme": "proportional"})).run()
    snap, index = trainer.snapshot(), trainer.buffer.index
    assert (snap.item, snap.items) == ("sequence", len(trainer.buffer))
    assert (snap.slots, snap.slots_used) == (index.capacity, index.used)
    assert snap.items <= snap.slots_used < snap.buffer_size
    assert snap.tree_levels[0][0] == pytest.approx(trainer.buffer.sampler.tree.total)
    plain = Trainer(tiny()).run(steps=100).snapshot()
    assert (plain.item, plain.items, plain.slots_used) == ("transition", 100, 100)
    assert plain.slots == plain.capacity


def test_goodness_of_fit_accepts_the_sampler_it_checks() -> None:
    trainer = Trainer(tiny(**{"replay.alpha": 1.0}))
    trainer.run()
    fit = trainer.goodness_of_fit(batches=64)
    assert fit.p_value > 1e-3, fit
    assert fit.expected.sum() == pytest.approx(64 * 16)


def test_uniform_scheme_has_no_tree_and_flat_probabilities() -> None:
    trainer = Trainer(tiny(**{"replay.scheme": "uniform"})).run()
    snap = trainer.snapshot()
    assert snap.tree_levels == [] and snap.scheme == "uniform"
    assert np.all(snap.last_batch.weights == 1.0)


def test_evaluate_and_checkpoint_state() -> None:
    trainer = Trainer(tiny(**{"train.eval_episodes": 2})).run()
    evaluations = trainer.evaluate()
    assert evaluations.returns.shape == (1, 2) and np.all(evaluations.returns >= 1)
    buffer = io.BytesIO()
    torch.save(trainer.checkpoint_state(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    assert state["counters"]["env_steps"] == 300
    assert RunConfig.from_dict(state["config"]) == trainer.config


def test_manifest_records_versions_shapes_and_timings() -> None:
    trainer = Trainer(tiny()).run()
    manifest = manifest_of(trainer)
    text = repr(manifest)
    for key in ("torch", "numpy", "gymnasium"):
        assert key in text
    assert manifest["counters"]["env_steps"] == 300
    assert manifest["learner"] == "fused-mlp"


# ----------------------------------------------------------------------------- resuming
def weights_only_round_trip(state: dict) -> dict:
    """``state`` as a checkpoint file gives it back: saved, then loaded with weights_only."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def step_to_an_episode_end(trainer: Trainer, after: int) -> None:
    """Step until at least ``after`` env steps are done and the last step ended an episode."""
    while trainer.env_steps < after or trainer.recorder.episode_end_steps[-1:] != [
        trainer.env_steps
    ]:
        trainer.step()


def assert_same_state(a: object, b: object, where: str = "state") -> None:
    """Nested dicts/lists of tensors and plain values, equal bit for bit."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype, where
        assert torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            assert_same_state(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_state(x, y, f"{where}[{k}]")
    else:
        assert a == b, where


def without_wall_time(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "wall_time"} for row in rows]


SEQUENCES = {
    "train.total_steps": 140,
    "train.learning_starts": 16,
    "replay.capacity": 64,
    "replay.batch_size": 8,
    "replay.mode": "sequences",
    "replay.sequence_length": 6,
    "replay.sequence_overlap": 3,
    "replay.burn_in": 2,
}
"""R2D2's sequence replay on masked CartPole, small enough that the ring of steps wraps (and
sequences leave) before the end."""

RESUMED_CONFIGS = {
    "proportional": tiny(**{"train.total_steps": 400}),
    "rank": tiny(**{"train.total_steps": 400, "replay.scheme": "rank"}),
    "uniform": tiny(**{"train.total_steps": 400, "replay.scheme": "uniform"}),
    "recurrent": tiny(
        "e14",
        **{
            "train.total_steps": 100,
            "train.learning_starts": 16,
            "replay.capacity": 64,
            "replay.batch_size": 8,
            "replay.window": 2,
        },
    ),
    "sequences": tiny("e14", **SEQUENCES),
    "sequences-rank-zero-state": tiny(
        "e14", **SEQUENCES, **{"replay.scheme": "rank", "replay.stored_state": False}
    ),
    "sequences-uniform": tiny("e14", **SEQUENCES, **{"replay.scheme": "uniform"}),
}


def step_inside_an_episode(trainer: Trainer, after: int) -> None:
    """Step until at least ``after`` env steps are done and the last step did not end an
    episode (some steps into one, where an env's hidden state matters)."""
    trainer.run(steps=after)
    while trainer.recorder.episode_end_steps[-1:] == [trainer.env_steps]:
        trainer.step()


def assert_resumed_like_uninterrupted(config: RunConfig, stop: Callable[[Trainer], None]) -> None:
    """Stopped where ``stop`` leaves it, saved (weights-only loadable), restored into a fresh
    trainer and run to the budget, a run ends bit for bit where the same run uninterrupted ends:
    counters, online and target weights, optimizer, replay memory with its priorities, every
    generator, the rows it streamed (every episode whole) and its telemetry. (Only wall time and
    timings differ.)"""
    whole = Trainer(config, sink=ListSink()).run()
    first = Trainer(config, sink=ListSink())
    stop(first)
    assert first.env_steps < config.train.total_steps
    state = weights_only_round_trip(first.checkpoint_state(resumable=True))
    first.close()
    resumed = Trainer(config, sink=ListSink())
    resumed.restore(state)
    assert (resumed.env_steps, resumed.updates, resumed.episodes) == (
        first.env_steps,
        first.updates,
        first.episodes,
    )
    resumed.run()

    assert (resumed.env_steps, resumed.updates, resumed.episodes) == (
        whole.env_steps,
        whole.updates,
        whole.episodes,
    )
    expected, got = (t.checkpoint_state(resumable=True) for t in (whole, resumed))
    for saved in (expected, got):
        del saved["resume"]["wall_time"], saved["resume"]["timings"]
    assert_same_state(expected, got)
    for rows in ("episodes", "steps"):
        before, after = getattr(first.sink, rows), getattr(resumed.sink, rows)
        assert without_wall_time(before + after) == without_wall_time(getattr(whole.sink, rows))
    snapshot, resumed_snapshot = whole.snapshot(), resumed.snapshot()
    for series in ("episode_returns", "episode_end_steps", "losses", "ess", "log_updates"):
        np.testing.assert_array_equal(getattr(snapshot, series), getattr(resumed_snapshot, series))
    np.testing.assert_array_equal(
        snapshot.weight_history.counts, resumed_snapshot.weight_history.counts
    )


@pytest.mark.parametrize("name", list(RESUMED_CONFIGS))
def test_a_run_resumed_between_two_episodes_goes_on_as_if_it_never_stopped(name: str) -> None:
    config = RESUMED_CONFIGS[name]
    assert_resumed_like_uninterrupted(
        config, lambda t: step_to_an_episode_end(t, after=config.train.learning_starts + 20)
    )


INSIDE_AN_EPISODE = {
    **RESUMED_CONFIGS,
    "cliffwalk": tiny("paper", **{"train.total_steps": 300}),
    "chain": tiny("chain-lesson", **{"train.total_steps": 300}),
    "market": tiny(
        "e15",
        **{
            "train.total_steps": 120,
            "train.learning_starts": 16,
            "replay.capacity": 64,
            "replay.batch_size": 8,
            "replay.window": 2,
        },
    ),
    "minatar-breakout": tiny("minatar", **{"train.total_steps": 200}),
    "minatar-seaquest": tiny(
        "minatar", **{"env.id": "rdqn/MinAtar-Seaquest-v0", "train.total_steps": 200}
    ),
}
"""Every env (CartPole; masked CartPole in "recurrent", with windows of two frames; Blind
Cliffwalk, the chain, the market; MinAtar's Breakout and Seaquest, whose games keep lists of
objects) and every scheme."""


@pytest.mark.parametrize("name", list(INSIDE_AN_EPISODE))
def test_a_run_resumed_inside_an_episode_goes_on_as_if_it_never_stopped(name: str) -> None:
    """Once, Ctrl-C at step 8,020, 25 steps into episode 232, diverged from the next episode
    on, and the cut steps belonged to no episode in the log; now the env's state, the window
    and the return so far are saved with the run."""
    config = INSIDE_AN_EPISODE[name]
    assert_resumed_like_uninterrupted(
        config, lambda t: step_inside_an_episode(t, after=config.train.learning_starts + 20)
    )


def test_a_checkpoint_saved_inside_an_episode_without_its_state_starts_a_new_one() -> None:
    """An older rdqn's checkpoint kept no episode state: the cut episode's steps stay stored and
    counted, it gets no episode row, and a new episode starts (no replay window reaches back
    into the cut one). Episode and update numbers run on."""
    config = tiny(**{"train.total_steps": 300, "train.log_every": 1})
    first = Trainer(config, sink=ListSink())
    step_inside_an_episode(first, after=150)
    saved = first.checkpoint_state(resumable=True)
    saved["resume"]["episode"] = None
    state = weights_only_round_trip(saved)
    resumed = Trainer(config, sink=ListSink())
    resumed.restore(state)
    resumed.step()
    storage = resumed.buffer.storage
    assert storage.episode_step[(resumed.buffer.cursor - 1) % storage.capacity] == 0
    resumed.run()
    assert resumed.env_steps == 300
    episodes = [row["episode"] for row in first.sink.episodes + resumed.sink.episodes]
    assert episodes == list(range(1, resumed.episodes + 1))
    updates = [row["updates"] for row in first.sink.steps + resumed.sink.steps]
    assert updates == list(range(1, resumed.updates + 1))


def test_restore_refuses_what_it_cannot_continue() -> None:
    config = tiny()
    trainer = Trainer(config).run(steps=100)
    weights_only = trainer.checkpoint_state()
    with pytest.raises(ValueError, match="holds no resume state"):
        Trainer(config).restore(weights_only)
    resumable = trainer.checkpoint_state(resumable=True)
    with pytest.raises(ValueError, match="another config"):
        Trainer(config.with_overrides({"seed": 1})).restore(resumable)
    stepped = Trainer(config).run(steps=1)
    with pytest.raises(RuntimeError, match="not stepped yet"):
        stepped.restore(resumable)
    obs = np.zeros(trainer.obs_shape, np.float32)
    trainer.buffer.add(obs, 0, 0.0, obs, False, False)  # as if cut off inside a step
    assert not trainer.between_steps
    assert trainer.checkpoint_state()["counters"]["env_steps"] == 100  # weights-only still saves
    with pytest.raises(RuntimeError, match="cut off inside step 101"):
        trainer.checkpoint_state(resumable=True)


def _window_means(returns: list[float]) -> list[float]:
    """Mean of the returns of episodes k-19 .. k, for every k from the 20th episode on."""
    return [float(np.mean(returns[k - 20 : k])) for k in range(20, len(returns) + 1)]


@pytest.mark.slow  # trains until the mean return reaches the goal: seconds
def test_stop_at_return_ends_at_the_first_episode_whose_20_episode_mean_reaches_it() -> None:
    """A goal changes nothing the run draws: the same seed replays the run without a goal up
    to the first episode after which the mean of the last 20 returns reaches the goal, and ends
    there, finished, short of its budget. The goal here is the reference run's highest mean
    so far at a window that is not the first, so the stop cannot come at the 20th episode."""
    reference = Trainer(tiny(**{"train.total_steps": 3_000})).run()
    means = _window_means(reference.recorder.episode_returns)
    k = next(i for i in range(1, len(means)) if means[i] > max(means[:i]))
    goal = means[k]
    trainer = Trainer(tiny(**{"train.total_steps": 3_000, "train.stop_at_return": goal}))
    trainer.run()
    episodes = k + 20
    assert trainer.recorder.episode_returns == reference.recorder.episode_returns[:episodes]
    assert trainer.env_steps == reference.recorder.episode_end_steps[episodes - 1] < 3_000
    assert trainer.done and trainer.goal_reached and trainer.status == "finished"
    with pytest.raises(RuntimeError, match="the run is over"):
        trainer.step()


def test_a_goal_out_of_reach_trains_the_whole_budget() -> None:
    trainer = Trainer(tiny(**{"train.stop_at_return": 1e9})).run()
    assert (trainer.env_steps, trainer.status, trainer.goal_reached) == (300, "finished", False)


def test_a_restored_run_that_had_reached_its_goal_is_done() -> None:
    config = tiny(**{"train.total_steps": 3_000, "train.stop_at_return": 0.0})
    trainer = Trainer(config).run()
    assert trainer.goal_reached and trainer.episodes == 20  # every return is >= 0
    restored = Trainer(config)
    assert not restored.done
    restored.restore(trainer.checkpoint_state(resumable=True))
    assert restored.done and restored.goal_reached


# -------------------------------------------------- resume states that restore must refuse
_STOPPED: dict[str, dict] = {}
"""`_stopped_state`'s states by the config's JSON: the refusal cases edit copies of one."""


def _stopped_state(config: RunConfig, steps: int) -> dict:
    """A resumable state of ``config`` stopped after ``steps`` env steps, read back as a
    checkpoint is (tensors, weights only); a copy of the one trained once per config."""
    key = json.dumps([config.to_dict(), steps], sort_keys=True)
    if key not in _STOPPED:
        trainer = Trainer(config).run(steps=steps)
        _STOPPED[key] = weights_only_round_trip(trainer.checkpoint_state(resumable=True))
        trainer.close()
    return copy.deepcopy(_STOPPED[key])


def _first_of(*path: object, value: object) -> object:
    def edit(state: dict) -> None:
        node = state
        for key in path:
            node = node[key]
        node.view(-1)[0] = value

    return edit


def _put(*path_and_value: object) -> object:
    """An edit setting the entry at the path (all but the last argument) to the last one."""
    *path, value = path_and_value

    def edit(state: dict) -> None:
        node = state
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


def _last_online_weight_nan(state: dict) -> None:
    online = state["agent"]["online"]
    online[list(online)[-1]].view(-1)[0] = float("nan")


def _one_step_too_many(state: dict) -> None:
    state["counters"]["env_steps"] += 1


def _extra_stage(state: dict) -> None:
    stages = state["resume"]["telemetry"]["td_stages"]
    stages["100%"] = {
        "edges": torch.linspace(0, 1, 31).double(),
        "counts": torch.zeros(30).double(),
    }


def _short_recent_td(state: dict) -> None:
    state["resume"]["telemetry"]["recent_td"].pop()


def _env_state_nan(state: dict) -> None:
    (physics,) = state["resume"]["episode"]["env"].values()  # CartPole's, masked or not
    physics.view(-1)[0] = float("nan")


def _all_terminated(state: dict) -> None:
    state["resume"]["replay"]["storage"]["terminated"].fill_(True)


REFUSED_STATES = {
    # counters a trainer of this config could not have counted
    "env steps past the budget": (_put("counters", "env_steps", 10**12), "past the budget"),
    "one env step more": (_one_step_too_many, "counters: updates is"),
    "episodes past env steps": (_put("counters", "episodes", 10**6), "more than the"),
    # the agent
    "NaN weight": (_last_online_weight_nan, "must be finite"),
    "NaN lr": (_put("agent", "optimizer", "param_groups", 0, "lr", float("nan")), "'lr'"),
    "exp_avg_sq < 0": (
        _first_of("agent", "optimizer", "state", 0, "exp_avg_sq", value=-1.0),
        "exp_avg_sq",
    ),
    "step past updates": (
        _put("agent", "optimizer", "state", 0, "step", torch.tensor(1e9)),
        "from 0 to the agent's",
    ),
    "agent updates differ": (_put("agent", "updates", 10**6), "agent: updates is 1000000"),
    # the replay memory, as only the trainer knows it
    "action out of range": (
        _first_of("resume", "replay", "storage", "actions", value=7),
        "the env has actions 0 to",
    ),
    "episode step chain": (
        _first_of("resume", "replay", "storage", "episode_step", value=10**6),
        "episode_step",
    ),
    "every row terminal": (_all_terminated, "ends its episode"),
    # telemetry consistent with the counters
    "extra td stage": (_extra_stage, "td_stages"),
    "recent td short": (_short_recent_td, "recent_td"),
    "weight history steps": (
        _first_of("resume", "telemetry", "weight_history", "steps", value=7),
        "weight_history: steps",
    ),
    "negative ess": (_first_of("resume", "telemetry", "ess", value=-1.0), "ess"),
    # timings
    "timed acts differ": (_put("resume", "timings", "counts", "act", 5), "timings count of act"),
    "unknown phase": (_put("resume", "timings", "totals", "warp", 1.0), "timings must time"),
    "no episode start generator": (_put("resume", "episode_start_rng", None), "episode_start_rng"),
}


EPISODE_REFUSED = {
    "episode between episodes": (_put("resume", "episode_steps", 0), "under way has 0 steps"),
    "NaN observation": (_first_of("resume", "episode", "obs", value=float("nan")), "obs must"),
    "observation shape": (_put("resume", "episode", "obs", torch.zeros(9)), "obs must"),
    "infinite return": (_put("resume", "episode", "return", float("inf")), "return must"),
    "env attribute missing": (_put("resume", "episode", "env", {}), "episode state has []"),
    "env state NaN": (_env_state_nan, "episode: the env's"),
    "window count": (_put("resume", "episode", "window", "count", 0), "window count"),
    "window slot": (_put("resume", "episode", "window", "last", 5), "window last"),
}
"""Edits of the episode under way (the recurrent state stops 8 steps into one, its window
two frames long)."""


@pytest.mark.parametrize(
    ("kind", "case"),
    [(kind, case) for kind in ("feed-forward", "recurrent") for case in REFUSED_STATES]
    + [("recurrent", case) for case in EPISODE_REFUSED],
)
def test_restore_refuses_a_state_no_trainer_of_its_config_saved(kind: str, case: str) -> None:
    """A checkpoint's state edited into one this config could not have saved is refused with a
    ``ValueError`` naming what is wrong, before anything changes (the trainer still restores
    the untouched state afterwards); before, such states resumed silently or failed the run
    later."""
    config = RESUMED_CONFIGS["proportional" if kind == "feed-forward" else "recurrent"]
    config = config.with_overrides({"train.log_every": 2, "train.histogram_every": 5})
    good = _stopped_state(config, 90)
    edit, said = {**REFUSED_STATES, **EPISODE_REFUSED}[case]
    bad = copy.deepcopy(good)
    edit(bad)
    trainer = Trainer(config)
    with pytest.raises(ValueError, match=re.escape(said)):
        trainer.restore(bad)
    assert (trainer.env_steps, trainer.updates, trainer.episodes) == (0, 0, 0)
    assert trainer.buffer.storage.writes == 0 and trainer.agent.updates == 0
    trainer.restore(good)
    assert trainer.env_steps == 90
    trainer.close()


def test_sequences_record_the_state_acting_carried_at_their_first_step() -> None:
    """Before the first update (the weights fixed), the state stored with each sequence is the
    online net's state after the steps of its episode before it, unrolled from zeros: acting
    carries the LSTM state through an episode and resets it when one begins."""
    config = tiny("e14", **{**SEQUENCES, "train.learning_starts": 60})
    trainer = Trainer(config).run(steps=60)
    assert trainer.updates == 0
    replay, storage = trainer.buffer, trainer.buffer.storage
    slots = replay.index.live_slots()
    assert slots.size > 5
    for slot in slots:
        first = int(replay.index.start[slot])
        t0 = int(storage.episode_step[first % storage.capacity])
        stored = replay.index.states[slot]
        if t0 == 0:
            np.testing.assert_array_equal(stored, 0.0)
            continue
        steps = storage.obs[np.arange(first - t0, first) % storage.capacity]
        with torch.no_grad():
            _, state = trainer.agent.online.unroll(torch.from_numpy(steps[None]))
        np.testing.assert_allclose(stored, state[0].numpy(), rtol=1e-5, atol=1e-6)
    assert any(storage.episode_step[int(replay.index.start[s]) % 64] for s in slots)


def test_a_sequence_run_learns_from_batches_of_sequences() -> None:
    """Every update draws sequences (P over the live ones, which the snapshot's histogram and
    the sampler check read), the ring of steps wraps, and greedy play carries the state."""
    trainer = Trainer(tiny("e14", **SEQUENCES), sink=ListSink()).run()
    assert trainer.updates == trainer.config.train.planned_updates
    assert trainer.buffer.index.head > 0  # sequences left as the ring wrapped
    snapshot = trainer.snapshot()
    assert snapshot.buffer_size == 64 and snapshot.fit is not None
    assert np.isfinite(trainer.sink.steps[-1]["td_abs_mean"])
    played = trainer.greedy_episode(seed=3)
    assert played.length >= 1
    view = memories(trainer)  # the explorer's view is of sequences (tests/training/test_memories)
    assert isinstance(view, SequenceMemories) and view.size == len(trainer.buffer)
