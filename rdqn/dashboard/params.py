"""The live page's shareable state: a preset and dotted config overrides <-> URL query parameters.

Copying the page's URL reproduces its setup (as TensorFlow Playground does). The page's only state
is a preset name and the dotted `RunConfig` overrides made on top of it; `URL_ALIASES` is the one
table from short URL names to those fields (``alpha`` is ``replay.alpha``). Values are parsed and
checked by the config's own rules (`rdqn.validation`), so a bad or out-of-range value is ignored
with a note for the page to show, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rdqn.config import PRESET_NAMES, config_field
from rdqn.dashboard.share import CLASS_CODE
from rdqn.presets import configure
from rdqn.validation import Flag, Integer, Real

__all__ = [
    "DEFAULT_PRESET",
    "DEMO_PRESET",
    "LIMITS",
    "URL_ALIASES",
    "ParsedParams",
    "check_setting",
    "parse_params",
    "to_params",
]

URL_ALIASES: dict[str, str] = {
    "env": "env.id",
    "scheme": "replay.scheme",
    "alpha": "replay.alpha",
    "beta": "replay.beta0",
    "seed": "seed",
    "steps": "train.total_steps",
    "warmup": "train.learning_starts",
    "capacity": "replay.capacity",
    "batch": "replay.batch_size",
    "window": "replay.window",
    # Sequence replay's fields before its mode: each is checked with those before it, and the
    # mode, last, checks them together (with the preset's a lone one may conflict).
    "burnin": "replay.burn_in",
    "overlap": "replay.sequence_overlap",
    "seq": "replay.sequence_length",
    "eta": "replay.priority_eta",
    "stored": "replay.stored_state",
    "mode": "replay.mode",
    "lr": "agent.lr",
    "gamma": "agent.gamma",
    "target": "agent.target_update",
    "eval": "train.eval_every",
}
"""URL name -> dotted config field. ``preset`` names the preset itself. An uploaded prices CSV
(``env.kwargs``) stays on the server that received it and does not travel in the URL."""
DEFAULT_PRESET = "per-notebook"
DEMO_PRESET = "demo"
"""The preset of Home's *Start demo* (`rdqn.presets`: solves CartPole in seconds)."""
LIMITS: dict[str, int] = {
    "replay.capacity": 1_000_000,
    "replay.batch_size": 1024,
    "replay.window": 64,
    "replay.sequence_length": 1_000,
    "train.learning_starts": 1_000_000,
    "train.total_steps": 5_000_000,
}
"""The most this server lets a page ask for, beyond what the config itself allows: the URL and
the settings form both stop here."""


@dataclass(frozen=True)
class ParsedParams:
    """What a URL asks for: a preset and overrides (both checked), plus the page's own keys."""

    preset: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    lesson: str | None = None
    """A key of `rdqn.dashboard.lessons.lessons()`."""
    run_id: str | None = None
    follow: str | None = None
    """A class code (`rdqn.dashboard.share`): follow that teacher's current run."""


def _value(path: str, raw: str) -> Any:
    """The text of a query parameter as the type its config field holds, checked by its rule."""
    rule = config_field(path).metadata["rule"]
    value: Any = raw
    try:
        if isinstance(rule, Integer):
            value = int(raw)
        elif isinstance(rule, Real):
            value = float(raw)
        elif isinstance(rule, Flag):
            value = {"true": True, "false": False}.get(raw.lower(), raw)
    except ValueError:
        pass  # the rule names the text it could not read
    value = rule.check(path, value)
    if path in LIMITS and value > LIMITS[path]:
        raise ValueError(f"{path} must be at most {LIMITS[path]:,} on this server, got {value:,}")
    return value


def check_setting(path: str, value: Any) -> Any:
    """``value`` for config field ``path`` if the live page would accept it (`ValueError` naming
    the field, the value and what is allowed otherwise).

    Text is read as a URL value is (``"0.5"`` for ``replay.alpha``); any other value (a lesson
    file's TOML number, bool or table) must already be of the field's type, an integer standing
    for a real. Checked by the field's rule (`rdqn.validation`) and this server's `LIMITS`.
    """
    if isinstance(value, str):
        return _value(path, value)
    value = config_field(path).metadata["rule"].check(path, value)
    if path in LIMITS and value > LIMITS[path]:
        raise ValueError(f"{path} must be at most {LIMITS[path]:,} on this server, got {value:,}")
    return value


def parse_params(
    params: Mapping[str, str], *, lesson_note: Callable[[str], str | None]
) -> ParsedParams:
    """Validated live-page settings from URL query parameters, with a note per ignored value.
    ``lesson_note(key)`` says why ``?lesson=<key>`` opens no lesson, None when it does
    (`rdqn.dashboard.lessons.lesson_note`: lesson files are read with this module's checks).

    Each override is also checked against the ones before it (a batch larger than the capacity
    is ignored, not the capacity).
    """
    notes: list[str] = []
    name = params.get("preset")
    if name is not None and name not in PRESET_NAMES:
        notes.append(f"ignored preset={name!r}: use one of {', '.join(PRESET_NAMES)}")
        name = None
    overrides: dict[str, Any] = {}
    for alias, path in URL_ALIASES.items():
        if alias not in params:
            continue
        raw = params[alias]
        try:
            value = _value(path, raw)
            configure(name or DEFAULT_PRESET, {**overrides, path: value})
        except ValueError as err:
            notes.append(f"ignored {alias}={raw!r}: {err}")
            continue
        overrides[path] = value
    lesson = params.get("lesson")
    if lesson is not None:
        why = lesson_note(lesson)
        if why is not None:
            notes.append(f"ignored lesson={lesson!r}: {why}")
            lesson = None
    run_id = params.get("run")
    if run_id is not None and not (run_id.isalnum() and len(run_id) <= 32):
        notes.append(f"ignored run={run_id!r}: not a run id")
        run_id = None
    follow = params.get("follow")
    if follow is not None:
        follow = follow.strip().upper()
        if not CLASS_CODE.match(follow):
            notes.append(f"ignored follow={params['follow']!r}: a class code is 4 letters/digits")
            follow = None
    return ParsedParams(
        preset=name,
        overrides=overrides,
        notes=notes,
        lesson=lesson,
        run_id=run_id,
        follow=follow,
    )


def to_params(preset_name: str, overrides: Mapping[str, Any]) -> dict[str, str]:
    """Query parameters for a preset and its overrides (those with a URL name; floats written
    exactly, so the URL reproduces them)."""
    out = {"preset": preset_name}
    for alias, path in URL_ALIASES.items():
        if path in overrides:
            value = overrides[path]
            out[alias] = repr(value) if isinstance(value, float) else str(value)
    return out
