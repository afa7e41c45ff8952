"""Guided lessons: a scripted sequence of steps for the live page, one TOML file per lesson.

Each step sets the controls, starts a run (or keeps the one on screen, or shows again the run an
earlier step started), points at one chart and says what to notice; the page offers next/back.
A lesson is a small file in `LESSON_FOLDER` that a teacher can copy and edit (the format is in
``assets/lessons/README.md``); its file name is its ``?lesson=`` key. Reading a file and checking
every field of it is `rdqn.dashboard.lesson_file`. No Streamlit here: the live page reads the
loaded lessons.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from rdqn.config import RunConfig
from rdqn.dashboard.assets import APP_ROOT
from rdqn.presets import configure

__all__ = [
    "ALL_CONTROLS",
    "HIGHLIGHTS",
    "LESSON_FOLDER",
    "MAX_STEPS",
    "RUN_KINDS",
    "SPEED_LABELS",
    "GuidedLesson",
    "LessonStep",
]

LESSON_FOLDER = APP_ROOT / "assets" / "lessons"
"""Where the shipped lessons live: one ``<key>.toml`` per lesson."""
HIGHLIGHTS: tuple[str, ...] = ("reward", "loss", "controls", "metrics", "watch")
"""What a step can point at on the live page: the reward curve, the loss chart, the α/β/scheme
controls, the counters row."""
RUN_KINDS: tuple[str, ...] = ("start", "keep", "restore")
"""``start``: a fresh run with the step's settings; ``keep``: the run on screen goes on;
``restore``: show again the run an earlier step started (``restore_from``)."""
SPEED_LABELS: tuple[str, ...] = (
    "1 step/s",
    "5 steps/s",
    "20 steps/s",
    "100 steps/s",
    "1,000 steps/s",
    "full speed",
)
"""The live page's speed choices (the keys of `rdqn.dashboard.state.SPEEDS`, which imports
Streamlit; a test keeps the two equal)."""
ALL_CONTROLS = frozenset({"alpha", "beta", "scheme", "settings"})
"""Live-page controls a step can leave visible: the URL names of the main controls (α, β₀,
the scheme) and ``settings``, the sidebar's run settings form."""
MAX_STEPS = 12
"""A lesson has 1 to this many steps."""


@dataclass(frozen=True)
class LessonStep:
    """One step of a guided lesson."""

    title: str
    notice: str
    """Markdown, 1-3 sentences: what the class should notice."""
    run: str
    """One of `RUN_KINDS`."""
    preset: str | None = None
    """Only on a ``start`` step: its preset (None: the lesson's)."""
    settings: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Only on a ``start`` step: dotted config overrides on top of the lesson's settings."""
    restore_from: int | None = None
    """Only on a ``restore`` step: the (1-based) number of the earlier ``start`` step whose run
    to show again."""
    highlight: str | None = None
    """One of `HIGHLIGHTS`, or None."""
    controls: tuple[str, ...] = ()
    """The live page's controls left visible (`ALL_CONTROLS`)."""
    speed: str | None = None
    """One of `SPEED_LABELS`, or None to leave the speed as it is."""


@dataclass(frozen=True)
class GuidedLesson:
    """A scripted lesson: a preset, settings shared by its steps, and 1 to `MAX_STEPS` steps."""

    key: str
    """The file name without ``.toml``: the ``?lesson=`` key."""
    title: str
    summary: str
    preset: str
    steps: tuple[LessonStep, ...]
    settings: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Dotted config overrides that every ``start`` step starts from."""
    order: int | None = None
    """Where the lesson is listed (lessons without one come after, by key)."""

    def step(self, number: int) -> LessonStep:
        """Step ``number``, counted from 1 as the page and the error messages do."""
        if not 1 <= number <= len(self.steps):
            raise IndexError(f"{self.key} has steps 1 to {len(self.steps)}, not {number}")
        return self.steps[number - 1]

    def run_step(self, number: int) -> int:
        """The number of the ``start`` step whose run is on screen at step ``number``."""
        step = self.step(number)
        while step.run != "start":
            number = step.restore_from if step.run == "restore" else number - 1
            step = self.step(number)
        return number

    def run_setup(self, number: int) -> tuple[str, dict[str, Any]]:
        """The preset and dotted overrides of the run on screen at step ``number``."""
        start = self.step(self.run_step(number))
        return start.preset or self.preset, {**self.settings, **start.settings}

    def config(self, number: int) -> RunConfig:
        """The config of the run on screen at step ``number``."""
        return configure(*self.run_setup(number))
