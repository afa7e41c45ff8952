"""The lessons on offer (``?lesson=<key>``): every file in `rdqn.dashboard.guided.LESSON_FOLDER`.

Read again whenever a file in the folder changes, so a teacher who drops in or edits a lesson
sees it on the next page load; a file that does not load is left out and its error kept for the
page to show (`lessons`).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from rdqn.dashboard.guided import LESSON_FOLDER, GuidedLesson
from rdqn.dashboard.lesson_file import LessonFileError, lesson_files, load_lessons

__all__ = ["lesson_note", "lessons", "unknown_lesson"]


def lessons() -> tuple[dict[str, GuidedLesson], tuple[LessonFileError, ...]]:
    """The lessons that load, by key in their order, and the errors of the files that do not."""
    stamp = tuple((path.name, *_changed(path)) for path in lesson_files(LESSON_FOLDER))
    return _load(stamp)


def lesson_note(key: str) -> str | None:
    """None when ``?lesson=<key>`` opens a lesson, else why not (`unknown_lesson`)."""
    return None if key in lessons()[0] else unknown_lesson(key)


def unknown_lesson(key: str) -> str:
    """Why ``?lesson=<key>`` opens no lesson: its file's error (naming the file, step and
    field), or that there is no such file, with the lessons there are."""
    found, errors = lessons()
    for error in errors:
        if Path(error.file).stem == key:
            return str(error)
    if not found:
        return "no lesson file loads on this server"
    return f"use one of {', '.join(found)}"


def _changed(path: Path) -> tuple[int, int]:
    """What tells an edited file from the one read before: its time and size (a file removed
    since it was listed, or a link to nothing, reads as (-1, -1) and fails to load, said so)."""
    try:
        info = os.stat(path)
    except OSError:
        return -1, -1
    return info.st_mtime_ns, info.st_size


@functools.lru_cache(maxsize=4)
def _load(
    stamp: tuple[tuple[str, int], ...],
) -> tuple[dict[str, GuidedLesson], tuple[LessonFileError, ...]]:
    errors: list[LessonFileError] = []
    found = load_lessons(LESSON_FOLDER, errors=errors)
    return found, tuple(errors)
