"""The live page's shareable state: query parameters <-> run settings, and classroom lessons.

Copying the page's URL reproduces its setup (as TensorFlow Playground does): preset, env, scheme,
alpha, beta0 and seed travel as query parameters. Parsing is forgiving: a bad or out-of-range value
is ignored with a note for the page to show, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rdqn.config import SCHEMES, RunConfig
from rdqn.envs import ENV_IDS
from rdqn.presets import PRESETS, preset

__all__ = [
    "LESSONS",
    "LIVE_DEFAULTS",
    "SHARED_KEYS",
    "Lesson",
    "ParsedParams",
    "config_from_settings",
    "parse_params",
    "settings_for_preset",
    "to_params",
]

SHARED_KEYS = ("preset", "env", "scheme", "alpha", "beta", "seed")


@dataclass(frozen=True)
class Lesson:
    """A classroom view: which live-page controls stay visible, and what the class should try."""

    title: str
    controls: tuple[str, ...]
    prompt: str


LESSONS: dict[str, Lesson] = {
    "alpha-beta": Lesson(
        "Prioritization and its correction",
        ("alpha", "beta"),
        "Move alpha from 0 (uniform) to 1 (fully proportional) and watch who gets replayed; then "
        "raise beta to correct the bias with importance-sampling weights.",
    ),
    "alpha": Lesson(
        "How strongly to prioritize",
        ("alpha",),
        "alpha = 0 is uniform replay. What happens to the learning curve as alpha grows?",
    ),
    "schemes": Lesson(
        "Uniform, proportional or rank-based",
        ("scheme", "alpha", "beta"),
        "Switch the replay scheme and compare the curves; the previous run stays on the chart.",
    ),
}


@dataclass(frozen=True)
class ParsedParams:
    values: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    lesson: Lesson | None = None
    run_id: str | None = None


def _unit_float(raw: str, name: str, notes: list[str]) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        notes.append(f"ignored {name}={raw!r}: not a number")
        return None
    if not 0.0 <= value <= 1.0:
        notes.append(f"ignored {name}={raw!r}: must be between 0 and 1")
        return None
    return value


def parse_params(params: Mapping[str, str]) -> ParsedParams:
    """Validated live-page settings from URL query parameters, with a note per ignored value."""
    values: dict[str, Any] = {}
    notes: list[str] = []
    choices = {"preset": tuple(PRESETS), "env": ENV_IDS, "scheme": SCHEMES}
    for key, allowed in choices.items():
        if key in params:
            if params[key] in allowed:
                values[key] = params[key]
            else:
                notes.append(f"ignored {key}={params[key]!r}: use one of {', '.join(allowed)}")
    for key in ("alpha", "beta"):
        if key in params:
            value = _unit_float(params[key], key, notes)
            if value is not None:
                values[key] = value
    if "seed" in params:
        raw = params["seed"]
        if raw.isdigit() and int(raw) < 2**31:
            values["seed"] = int(raw)
        else:
            notes.append(f"ignored seed={raw!r}: must be a whole number from 0 to 2147483647")
    lesson = None
    if "lesson" in params:
        lesson = LESSONS.get(params["lesson"])
        if lesson is None:
            notes.append(f"ignored lesson={params['lesson']!r}: use one of {', '.join(LESSONS)}")
    run_id = params.get("run")
    if run_id is not None and not (run_id.isalnum() and len(run_id) <= 32):
        notes.append(f"ignored run={run_id!r}: not a run id")
        run_id = None
    return ParsedParams(values=values, notes=notes, lesson=lesson, run_id=run_id)


def to_params(values: Mapping[str, Any]) -> dict[str, str]:
    """Query parameters for the shared keys of `values` (floats rounded for readable URLs)."""
    out = {}
    for key in SHARED_KEYS:
        if key in values and values[key] is not None:
            value = values[key]
            out[key] = f"{value:g}" if isinstance(value, float) else str(value)
    return out


LIVE_DEFAULTS: dict[str, Any] = {
    "preset": "per-notebook",
    "env": "CartPole-v1",
    "scheme": "proportional",
    "alpha": 0.6,
    "beta": 0.4,
    "seed": 0,
    "steps": 100_000,
    "capacity": 10_000,
    "batch": 32,
    "window": 1,
    "lr": 1e-3,
    "gamma": 0.99,
    "target": "hard",
}
"""What the live page starts with: the PER notebook's agent on CartPole with its whole budget,
about a minute at full speed: long enough to learn to balance."""


def settings_for_preset(name: str) -> dict[str, Any]:
    """The live-page settings a preset implies (its env, scheme and hyperparameters)."""
    config = preset(name)
    return {
        "preset": name,
        "env": config.env.id,
        "scheme": config.replay.scheme,
        "alpha": config.replay.alpha,
        "beta": config.replay.beta0,
        "steps": config.train.total_steps,
        "capacity": config.replay.capacity,
        "batch": config.replay.batch_size,
        "window": config.replay.window,
        "lr": config.agent.lr,
        "gamma": config.agent.gamma,
        "target": config.agent.target_update,
    }


def config_from_settings(
    settings: Mapping[str, Any], env_kwargs: Mapping[str, Any] | None = None
) -> RunConfig:
    """The `RunConfig` for the live page's settings (raises `ValueError` naming a bad field)."""
    base = preset(settings["preset"])
    same_env = settings["env"] == base.env.id
    overrides: dict[str, Any] = {
        "env.id": settings["env"],
        "env.kwargs": dict(env_kwargs) if env_kwargs else (base.env.kwargs if same_env else {}),
        "replay.scheme": settings["scheme"],
        "replay.alpha": float(settings["alpha"]),
        "replay.beta0": float(settings["beta"]),
        "replay.capacity": int(settings["capacity"]),
        "replay.batch_size": int(settings["batch"]),
        "replay.window": int(settings["window"]) if base.agent.network == "recurrent" else 1,
        "agent.lr": float(settings["lr"]),
        "agent.gamma": float(settings["gamma"]),
        "agent.target_update": settings["target"],
        "train.total_steps": int(settings["steps"]),
        "train.learning_starts": max(base.train.learning_starts, int(settings["batch"])),
        "seed": int(settings["seed"]),
    }
    return base.with_overrides(overrides)
