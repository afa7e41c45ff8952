"""The lessons on offer (``?lesson=<key>``): every file in `dashboard.guided.LESSON_FOLDER`.

Read again whenever a file in the folder changes, so a teacher who drops in or edits a lesson
sees it on the next page load; a file that does not load is left out and its error kept for the
page to show (`lessons`).
"""

from __future__ import annotations

import functools

from dashboard.guided import LESSON_FOLDER, GuidedLesson, LessonFileError, load_lessons

__all__ = ["lessons"]


def lessons() -> tuple[dict[str, GuidedLesson], tuple[LessonFileError, ...]]:
    """The lessons that load, by key in their order, and the errors of the files that do not."""
    stamp = tuple(
        (path.name, path.stat().st_mtime_ns) for path in sorted(LESSON_FOLDER.glob("*.toml"))
    )
    return _load(stamp)


@functools.lru_cache(maxsize=4)
def _load(
    stamp: tuple[tuple[str, int], ...],
) -> tuple[dict[str, GuidedLesson], tuple[LessonFileError, ...]]:
    errors: list[LessonFileError] = []
    found = load_lessons(LESSON_FOLDER, errors=errors)
    return found, tuple(errors)
