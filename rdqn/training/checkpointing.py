"""What a trainer saves to go on later, and how a fresh one goes on from it, at any step.

`save(trainer, resumable=True)` holds everything the loop depends on (weights, target,
optimizer, replay memory with its priorities, every generator, counters, telemetry, and inside an
episode the env's own state, the observation, the acting window and the return so far);
`restore` makes a fresh trainer of the same config go on from it exactly as if it had never
stopped. (A checkpoint of an older rdqn, saved inside an episode without its state, drops the rest
of that episode: its steps stay counted and stored, and a new one begins.) The whole state is
checked first (`rdqn.training.resume_checks`), so a refused one changes nothing. ``trainer`` is a
`rdqn.training.trainer.Trainer`, which calls these (typed `Any`: no import back).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rdqn.envs.episode_state import episode_state, load_episode_state
from rdqn.replay.state_checks import ReplayStateError
from rdqn.training.resume_checks import check_resume
from rdqn.training.state import RESUME_KEY, env_rng, to_checkpoint

__all__ = ["restore", "save"]


def save(trainer: Any, *, resumable: bool = False) -> dict[str, Any]:  # noqa: ANN401
    """Agent weights, optimizer, counters and config, loadable with weights_only=True; with
    ``resumable`` also, under `RESUME_KEY`, the rest of what `restore` needs: the replay
    memory (observations, actions, rewards, flags, the sum/min trees or rank order, the
    maximum priority, cursor and size), the replay, env, action-space and diagnostic
    generators, telemetry, timings and wall time. The torch generator only initialises the
    weights, so it is not needed. Refused (``RuntimeError``) unless `between_steps`.
    """
    state: dict[str, Any] = {
        "agent": trainer.agent.state_dict(),
        "config": trainer.config.to_dict(),
        "counters": {
            "env_steps": trainer.env_steps,
            "updates": trainer.updates,
            "episodes": trainer.episodes,
        },
    }
    if resumable:
        if not trainer.between_steps:
            raise RuntimeError(
                f"the trainer was cut off inside step {trainer.env_steps + 1}; its state cannot "
                "be resumed"
            )
        state[RESUME_KEY] = {
            "replay": to_checkpoint(trainer.buffer.state_dict()),
            "env_rng": env_rng(trainer.env).bit_generator.state,
            "episode_start_rng": trainer._episode_start_rng,
            "action_space_rng": trainer.env.action_space.np_random.bit_generator.state,
            "diagnostic_rng": trainer._diagnostic_rng.bit_generator.state,
            "episode_steps": trainer._episode_length,
            "episode": _episode_under_way(trainer),
            "telemetry": to_checkpoint(trainer.recorder.state_dict()),
            "timings": trainer.timings.state_dict(),
            "wall_time": trainer._clock() - trainer._started,
        }
    return state


def _episode_under_way(trainer: Any) -> dict[str, Any] | None:  # noqa: ANN401
    """What the episode under way needs to go on exactly (None between two episodes): its
    observation, return so far, the env's own state (`rdqn.envs.episode_state`) and the
    acting window's frames."""
    if trainer._episode_length == 0:
        return None
    episode = {
        "obs": np.asarray(trainer._obs),
        "return": trainer._episode_return,
        "env": episode_state(trainer.env),
        "window": trainer.windows.state_dict(),
    }
    if trainer.sequences:
        episode["state"] = trainer._carried.copy()
    return to_checkpoint(episode)


def restore(trainer: Any, state: Mapping[str, Any]) -> None:  # noqa: ANN401
    """Continue from ``state`` (`checkpoint_state(resumable=True)` of a trainer of this
    config) where it stopped; see the module docstring.

    Only a trainer that has not stepped yet restores (``RuntimeError``). The whole state is
    checked before anything changes (`check_resume`): a state without resume data, of another
    config, or that a trainer of this config could not have saved raises ``ValueError``
    (`ResumeStateError`, or the replay memory's `ReplayStateError`) naming what is wrong.
    """
    if trainer.env_steps or trainer.status != "created":
        raise RuntimeError("only a trainer that has not stepped yet can restore a run")
    checked = check_resume(trainer, state)
    try:
        trainer.buffer.load_state_dict(checked.replay)  # checked whole before anything changes
    except ReplayStateError as err:
        said = str(err)
        if not said.startswith("replay state"):
            said = f"replay state: {said}"
        raise ReplayStateError(said) from None
    trainer.agent.load_state_dict(state["agent"])
    trainer.env_steps, trainer.updates, trainer.episodes = checked.counters
    resume = checked.resume
    trainer._diagnostic_rng.bit_generator.state = resume["diagnostic_rng"]
    trainer.recorder.load_state_dict(checked.telemetry)
    trainer._goal_reached = trainer._reaches_goal()
    trainer.timings.load_state_dict(resume["timings"])
    trainer._started = trainer._clock() - float(resume["wall_time"])
    rng = env_rng(trainer.env)
    episode = checked.episode
    if resume["episode_steps"] == 0:
        # Stopped between two episodes: replay the reset that began the next one (the seeded
        # first reset, done when this trainer was built, needs no replay).
        trainer._episode_start_rng = resume["episode_start_rng"]
        if trainer._episode_start_rng is not None:
            rng.bit_generator.state = trainer._episode_start_rng
            trainer._obs, _ = trainer.env.reset()
            rng.bit_generator.state = resume["env_rng"]
        trainer.windows.reset(trainer._obs)
    elif episode is not None:
        # Stopped inside an episode: the env, the acting window and the episode's return go
        # on where they were (the env was reset when this trainer was built).
        trainer._episode_start_rng = resume["episode_start_rng"]
        load_episode_state(trainer.env, episode["env"], resume["episode_steps"])
        rng.bit_generator.state = resume["env_rng"]
        trainer._obs = episode["obs"]
        trainer._episode_return = float(episode["return"])
        trainer._episode_length = int(resume["episode_steps"])
        trainer.windows.load_state_dict(episode["window"])
        if trainer.sequences:
            trainer._carried = np.array(episode["state"], np.float32)
    else:
        # Saved inside an episode by an rdqn that kept no episode state: its stored steps
        # stay, its end is never seen; the next transition starts a new episode (no window
        # reaches back into the cut one).
        rng.bit_generator.state = resume["env_rng"]
        trainer._episode_start_rng = resume["env_rng"]
        trainer.buffer.new_episode()
        trainer._obs, _ = trainer.env.reset()
        trainer.windows.reset(trainer._obs)
    trainer.env.action_space.np_random.bit_generator.state = resume["action_space_rng"]
