"""Checking a resume state before a trainer restores it (`rdqn.training.trainer.Trainer.restore`).

A checkpoint is a file anyone with access to the folder can edit, so a state with a valid digest
may still be one no trainer of its config saved, and the kernels, the learner and the store trust
what they are given. `check_resume` checks every part against what a fresh trainer of the config
has or what the counters determine (``trainer``: a fresh `rdqn.training.trainer.Trainer` of the
state's config), and changes nothing. A resumed run's worker checks its checkpoint so, in the
trainer it resumes, before the run is taken (`rdqn.runs.lifecycle`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from rdqn.config import RunConfig
from rdqn.envs.episode_state import check_episode_state
from rdqn.replay import WindowBuilder
from rdqn.replay.storage import EPISODE_STEP_MAX
from rdqn.training.state import RESUME_KEY, ResumeStateError, env_rng, from_checkpoint
from rdqn.training.timings import ACT, ENV, INIT, SAMPLE, UPDATE, Timings
from rdqn.validation import is_integer, is_real, shown

__all__ = ["CheckedResume", "check_resume"]


_RESUME_KEYS = (
    "replay",
    "env_rng",
    "episode_start_rng",
    "action_space_rng",
    "diagnostic_rng",
    "episode_steps",
    "telemetry",
    "timings",
    "wall_time",
)
"""The entries of a resume state (`Trainer.checkpoint_state`)."""


class CheckedResume(NamedTuple):
    """What `Trainer.check_resume` accepted: the resume entry, the counters (env steps, updates,
    episodes), the replay and telemetry states and the episode under way (None between two
    episodes, or from an rdqn that kept none) as numpy arrays."""

    resume: Mapping[str, Any]
    counters: tuple[int, int, int]
    replay: Any
    telemetry: Any
    episode: Any = None


def _check_generator(name: str, value: Any, like: np.random.Generator) -> None:
    """``value`` is a state the bit generator of ``like`` takes (tried on a fresh one)."""
    fresh = type(like.bit_generator)()
    try:
        fresh.state = value
    except (KeyError, TypeError, ValueError, OverflowError) as err:
        raise ResumeStateError(
            f"{name} is not a {type(fresh).__name__} generator state ({type(err).__name__}: {err})"
        ) from None


def check_resume(trainer: Any, state: Mapping[str, Any]) -> CheckedResume:  # noqa: ANN401
    """Check a resume state before `restore` uses any of it; changes nothing.

    A checkpoint is a file anyone with access to the folder can edit, so a state with a
    valid digest may still be one no trainer of this config saved, and the kernels,
    the learner and the store trust what they are given. Checked here, each against what
    this fresh trainer of the config has or what the counters determine: the config; the
    counters (env steps within the budget, the updates they give, episodes); the agent
    (`DQNAgent.check_state`: weights, optimizer, generator; its update count the counters');
    the replay memory's writes (one per env step), actions (within the env's) and episode
    position (the trainer's); every generator's state; the episode under way (within the
    steps since the last episode ended); the wall time; the telemetry
    (`TelemetryRecorder.check_state`) and timings (`Timings.check_state`). The replay
    memory's own arrays are checked by its `load_state_dict`, before it changes anything.
    Raises ``ValueError`` (`ResumeStateError`) naming the part and what is wrong.
    """
    if not isinstance(state, Mapping):
        raise ResumeStateError(f"the checkpoint holds a {type(state).__name__}, not a dict")
    resume = state.get(RESUME_KEY)
    if resume is None:
        raise ResumeStateError(
            "the checkpoint holds no resume state (it was saved when the run ended, or by an "
            "older rdqn): only its weights can be loaded"
        )
    if not isinstance(resume, Mapping):
        raise ResumeStateError(f"{RESUME_KEY} must be a dict, got {type(resume).__name__}")
    try:
        config = RunConfig.from_dict(state.get("config"))
    except (TypeError, ValueError, KeyError, AttributeError) as err:
        raise ResumeStateError(f"config cannot be read: {err}") from None
    if config != trainer.config:
        raise ResumeStateError("the checkpoint was saved by a run of another config")
    missing = [key for key in _RESUME_KEYS if key not in resume]
    if missing:
        raise ResumeStateError(f"{RESUME_KEY} has no {', '.join(map(repr, missing))}")
    env_steps, updates, episodes = counters = _check_counters(trainer, state.get("counters"))
    try:
        trainer.agent.check_state(state.get("agent"))
    except ValueError as err:
        raise ResumeStateError(f"agent: {err}") from None
    if state["agent"]["updates"] != updates:
        raise ResumeStateError(
            f"agent: updates is {shown(state['agent']['updates'])}, but the counters give "
            f"{updates:,}"
        )
    replay = from_checkpoint(resume["replay"])
    telemetry = from_checkpoint(resume["telemetry"])
    episode_steps = resume["episode_steps"]
    last_end = 0
    ends = telemetry.get("episode_end_steps") if isinstance(telemetry, Mapping) else None
    if isinstance(ends, np.ndarray) and ends.shape == (episodes,) and episodes:
        last_end = int(ends[-1])
    if not (is_integer(episode_steps) and 0 <= episode_steps <= env_steps - last_end):
        raise ResumeStateError(
            f"episode_steps is {shown(episode_steps)}; it must be an integer from 0 to the "
            f"{max(0, env_steps - last_end):,} env steps since the last episode ended"
        )
    _check_replay_counts(trainer, replay, env_steps, int(episode_steps))
    for name, generator in (
        ("env_rng", env_rng(trainer.env)),
        ("action_space_rng", trainer.env.action_space.np_random),
        ("diagnostic_rng", trainer._diagnostic_rng),
    ):
        _check_generator(name, resume[name], generator)
    if resume["episode_start_rng"] is not None:
        _check_generator("episode_start_rng", resume["episode_start_rng"], env_rng(trainer.env))
    elif episodes:
        raise ResumeStateError(
            "episode_start_rng is None (the seeded first episode), but "
            f"{episodes:,} episodes have ended"
        )
    wall_time = resume["wall_time"]
    if not (is_real(wall_time) and wall_time >= 0):
        raise ResumeStateError(
            f"wall_time must be a finite number of seconds >= 0, got {shown(wall_time)}"
        )
    train = trainer.config.train
    try:
        trainer.recorder.check_state(
            telemetry,
            env_steps=env_steps,
            updates=updates,
            episodes=episodes,
            log_every=train.log_every,
            histogram_every=train.histogram_every,
            batch_size=trainer.config.replay.batch_size,
        )
    except ValueError as err:
        raise ResumeStateError(f"telemetry: {err}") from None
    try:
        Timings.check_state(
            resume["timings"],
            {
                INIT: 1,
                ACT: env_steps,
                ENV: env_steps + episodes,
                SAMPLE: 2 * updates,
                UPDATE: updates,
            },
        )
    except ValueError as err:
        raise ResumeStateError(str(err)) from None
    episode = _check_episode(trainer, resume.get("episode"), int(episode_steps))
    return CheckedResume(resume, counters, replay, telemetry, episode)


def _check_episode(trainer: Any, saved: Any, episode_steps: int) -> Any:  # noqa: ANN401
    """The episode under way as numpy arrays (None if none was saved), if a trainer of this
    config could have saved it ``episode_steps`` steps into an episode."""
    if saved is None or episode_steps == 0:  # restore reads none between two episodes
        return None
    episode = from_checkpoint(saved)
    keys = ["env", "obs", "return", "window"] + (["state"] if trainer.sequences else [])
    if not isinstance(episode, Mapping) or sorted(episode) != sorted(keys):
        raise ResumeStateError(f"episode must be a dict of {', '.join(keys)}")
    if trainer.sequences:
        carried, like = episode["state"], trainer._carried
        if not (
            isinstance(carried, np.ndarray)
            and carried.shape == like.shape
            and carried.dtype == like.dtype
            and bool(np.isfinite(carried).all())
        ):
            raise ResumeStateError(
                f"episode: state (the LSTM state acting carries) must be finite, of shape "
                f"{like.shape} and dtype {like.dtype}"
            )
    obs, like = episode["obs"], np.asarray(trainer._obs)
    if not (
        isinstance(obs, np.ndarray)
        and obs.shape == like.shape
        and obs.dtype == like.dtype
        and bool(np.isfinite(obs).all())
    ):
        raise ResumeStateError(
            f"episode: obs must be finite, of shape {like.shape} and dtype {like.dtype}"
        )
    if not is_real(episode["return"]):
        raise ResumeStateError(
            f"episode: return must be a finite number, got {shown(episode['return'])}"
        )
    try:
        check_episode_state(trainer.env, episode["env"])
        windows = trainer.windows
        WindowBuilder(windows.length, trainer.obs_shape, windows.dtype).load_state_dict(
            episode["window"]
        )
    except ValueError as err:
        raise ResumeStateError(f"episode: {err}") from None
    return episode


def _check_counters(trainer: Any, counters: Any) -> tuple[int, int, int]:  # noqa: ANN401
    """The counters (env steps, updates, episodes), if a trainer of this config could have
    counted them."""
    if not isinstance(counters, Mapping):
        raise ResumeStateError(f"counters must be a dict, got {shown(counters)}")
    values = []
    for name in ("env_steps", "updates", "episodes"):
        value = counters.get(name)
        if not (is_integer(value) and value >= 0):
            raise ResumeStateError(f"counters: {name} must be an integer >= 0, got {shown(value)}")
        values.append(int(value))
    env_steps, updates, episodes = values
    train = trainer.config.train
    if env_steps > train.total_steps:
        raise ResumeStateError(
            f"counters: env_steps is {env_steps:,}, past the budget of {train.total_steps:,}"
        )
    expected = max(0, env_steps // train.train_every - train.learning_starts // train.train_every)
    if updates != expected:
        raise ResumeStateError(
            f"counters: updates is {updates:,}, but {env_steps:,} env steps give {expected:,} "
            f"(one every {train.train_every} after the first {train.learning_starts:,})"
        )
    if episodes > env_steps:
        raise ResumeStateError(
            f"counters: episodes is {episodes:,}, more than the {env_steps:,} env steps"
        )
    return env_steps, updates, episodes


def _check_replay_counts(
    trainer: Any,  # noqa: ANN401
    replay: Any,
    env_steps: int,
    episode_steps: int,
) -> None:
    """What only the trainer knows of its replay memory: one write per env step, actions of
    its env's action space, and the episode position it counts. (Whatever is not an array
    or number here, the buffer's own check refuses.)"""
    storage = replay.get("storage") if isinstance(replay, Mapping) else None
    if not isinstance(storage, Mapping):
        return
    writes = storage.get("writes")
    if is_integer(writes) and writes != env_steps:
        raise ResumeStateError(
            f"replay: storage writes is {writes:,}, but the counters give {env_steps:,} env "
            "steps (one write each)"
        )
    actions = storage.get("actions")
    if isinstance(actions, np.ndarray) and actions.dtype.kind in "iu" and actions.size:
        bad = (actions < 0) | (actions >= trainer.n_actions)
        if bad.any():
            k = int(np.argmax(bad.reshape(-1)))
            raise ResumeStateError(
                f"replay: storage actions[{k}] is {actions.reshape(-1)[k]}, but the env has "
                f"actions 0 to {trainer.n_actions - 1}"
            )
    following = storage.get("next_episode_step")
    if is_integer(following) and following != min(episode_steps, EPISODE_STEP_MAX):
        raise ResumeStateError(
            f"replay: storage next_episode_step is {following:,}, but the episode under way "
            f"has {episode_steps:,} steps"
        )
