"""Classroom lessons (``?lesson=alpha-beta``): which live-page controls stay visible, what to try.

Controls are named as in the URL (`dashboard.params.URL_ALIASES`): ``alpha``, ``beta``, ``scheme``;
``settings`` is the sidebar's run settings form.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ALL_CONTROLS", "LESSONS", "Lesson"]

ALL_CONTROLS = frozenset({"alpha", "beta", "scheme", "settings"})


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
