"""A lesson file read and checked: `load_lesson` turns one TOML file into a `GuidedLesson`.

A bad file is a `LessonFileError` that names the file, the step, the field, the bad value and
what is allowed: every key is checked, so a typo is an error, never silently ignored. The format
is in ``assets/lessons/README.md``; the lessons are `rdqn.dashboard.guided`.

Settings are written with the URL's names (`rdqn.dashboard.params.URL_ALIASES`: ``alpha``, ``beta``,
``scheme``, ``seed``, ``steps`` ...) or as dotted config fields (``replay.alpha``), and checked by
the same rules as URL values (`rdqn.dashboard.params.check_setting`).
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from rdqn.config import PRESET_NAMES, RunConfig
from rdqn.dashboard.guided import (
    ALL_CONTROLS,
    HIGHLIGHTS,
    LESSON_FOLDER,
    MAX_STEPS,
    RUN_KINDS,
    SPEED_LABELS,
    GuidedLesson,
    LessonStep,
)
from rdqn.dashboard.params import URL_ALIASES, check_setting
from rdqn.presets import configure

__all__ = [
    "KEY_PATTERN",
    "MAX_FILE_BYTES",
    "NOTICE_LIMIT",
    "OTHER_FORMATS",
    "TITLE_LIMIT",
    "LessonFileError",
    "lesson_files",
    "load_lesson",
    "load_lessons",
]

MAX_FILE_BYTES = 64 * 1024
"""A lesson is a few kilobytes (12 steps of at most 600-character notices): a larger file is
refused unread, so a stray dump in the folder is not read into memory on every page load."""
OTHER_FORMATS = (".yaml", ".yml", ".json")
"""Files a teacher may drop in the folder for a lesson in another format: each is reported,
not silently ignored (lessons are TOML)."""
TITLE_LIMIT = 80
NOTICE_LIMIT = 600
"""Characters: a notice is read off a projector, about three sentences."""
KEY_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
"""A lesson's key (its file name without ``.toml``) goes in the URL: ``?lesson=alpha-beta``."""

_LESSON_FIELDS = ("title", "summary", "preset", "order", "settings", "steps")
_STEP_FIELDS = (
    "title",
    "notice",
    "run",
    "preset",
    "settings",
    "restore_from",
    "highlight",
    "controls",
    "speed",
)
_CONFIG_LEAVES = frozenset(RunConfig().leaves()) - {"preset"}
_SETTING_NAMES = tuple(URL_ALIASES) + tuple(sorted(_CONFIG_LEAVES))


class LessonFileError(ValueError):
    """A lesson file that cannot be used; the message names the file, the step (1-based, with its
    title when known), the field, the bad value and what is allowed."""

    def __init__(
        self,
        file: str,
        message: str,
        *,
        step: int | None = None,
        step_title: str | None = None,
        field: str | None = None,
        line: int | None = None,
    ) -> None:
        self.file, self.step, self.step_title, self.field, self.line = (
            file,
            step,
            step_title,
            field,
            line,
        )
        where = [file]
        if line is not None:
            where.append(f"line {line}")
        if step is not None:
            where.append(f'step {step} ("{step_title}")' if step_title else f"step {step}")
        if field is not None:
            where.append(f'field "{field}"')
        super().__init__(f"{', '.join(where)}: {message}")


@dataclass(frozen=True)
class _Where:
    """Where in a file a value was read: for the error message."""

    file: str
    step: int | None = None
    step_title: str | None = None

    def error(self, field: str | None, message: str) -> LessonFileError:
        return LessonFileError(
            self.file, message, step=self.step, step_title=self.step_title, field=field
        )


def _suggest(name: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(options), n=1)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _check_keys(where: _Where, table: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for name in table:
        if name not in allowed:
            raise where.error(
                name,
                f"unknown field{_suggest(name, allowed)}; the fields are {', '.join(allowed)}",
            )


def _text(where: _Where, table: Mapping[str, Any], name: str, limit: int) -> str:
    if name not in table:
        raise where.error(name, "missing: write it as text in quotes")
    value = table[name]
    if not isinstance(value, str) or not value.strip():
        raise where.error(name, f"{value!r} is not text: write it in quotes, not empty")
    value = value.strip()
    if len(value) > limit:
        raise where.error(
            name, f"{len(value)} characters, at most {limit} (it is read off a projector)"
        )
    return value


def _choice(
    where: _Where, table: Mapping[str, Any], name: str, options: Iterable[Any]
) -> str | None:
    if name not in table:
        return None
    value, options = table[name], tuple(options)
    if value not in options or not isinstance(value, str):
        hint = _suggest(value, options) if isinstance(value, str) else ""
        allowed = ", ".join(f'"{option}"' for option in options)
        raise where.error(name, f"{value!r} is not allowed{hint}; use one of {allowed}")
    return value


def _integer(where: _Where, table: Mapping[str, Any], name: str) -> int | None:
    if name not in table:
        return None
    value = table[name]
    if not isinstance(value, int) or isinstance(value, bool):
        raise where.error(name, f"{value!r} is not a whole number")
    return value


def _settings(where: _Where, table: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
    """Dotted path -> (the name as written, checked value)."""
    raw = table.get("settings", {})
    if not isinstance(raw, dict):
        raise where.error("settings", f"{raw!r} is not a table: write {{ alpha = 0.6, seed = 1 }}")
    out: dict[str, tuple[str, Any]] = {}
    for name, value in _flatten(raw, ""):
        field_name = f"settings.{name}"
        path = URL_ALIASES.get(name, name)
        if name == "preset":
            raise where.error(field_name, "the preset is not a setting: write preset = ... instead")
        if path not in _CONFIG_LEAVES:
            raise where.error(
                field_name,
                f"no such setting{_suggest(name, _SETTING_NAMES)}; use a URL name "
                f"({', '.join(URL_ALIASES)}) or a config field such as replay.alpha",
            )
        if path in out:
            raise where.error(field_name, f'set twice (as "{out[path][0]}" and "{name}")')
        try:
            out[path] = (name, check_setting(path, value))
        except ValueError as err:
            raise where.error(field_name, str(err)) from None
    return out


def _flatten(table: Mapping[str, Any], prefix: str) -> list[tuple[str, Any]]:
    """TOML reads ``{ replay.alpha = 0.5 }`` as a nested table: back to dotted names, down to
    the config's leaf fields (``env.kwargs`` is itself a table)."""
    items: list[tuple[str, Any]] = []
    for name, value in table.items():
        path = f"{prefix}{name}"
        if isinstance(value, dict) and any(leaf.startswith(f"{path}.") for leaf in _CONFIG_LEAVES):
            items.extend(_flatten(value, f"{path}."))
        else:
            items.append((path, value))
    return items


def _build(
    where: _Where,
    preset_name: str,
    lesson_settings: Mapping[str, tuple[str, Any]],
    step_settings: Mapping[str, tuple[str, Any]],
    top: _Where,
) -> None:
    """Check that the settings build a run, adding one at a time to name the one that breaks."""
    overrides: dict[str, Any] = {}
    for source, settings in ((top, lesson_settings), (where, step_settings)):
        for path, (name, value) in settings.items():
            overrides[path] = value
            try:
                configure(preset_name, overrides)
            except ValueError as err:
                context = f' (with step {where.step}\'s preset "{preset_name}")'
                raise source.error(
                    f"settings.{name}", f"{err}{context if source is top else ''}"
                ) from None


def _step(
    top: _Where,
    number: int,
    table: Any,
    lesson_preset: str,
    lesson_settings: Mapping[str, tuple[str, Any]],
    starts: set[int],
) -> LessonStep:
    if not isinstance(table, dict):
        raise top.error("steps", f"step {number} is {table!r}, not a table: write [[steps]]")
    title = table.get("title")
    where = _Where(top.file, number, title.strip() if isinstance(title, str) else None)
    _check_keys(where, table, _STEP_FIELDS)
    title = _text(where, table, "title", TITLE_LIMIT)
    notice = _text(where, table, "notice", NOTICE_LIMIT)
    if "run" not in table:
        raise where.error("run", f"missing: use one of {', '.join(RUN_KINDS)}")
    run = _choice(where, table, "run", RUN_KINDS)
    if run != "start" and number == 1:
        raise where.error("run", f'"{run}": the first step has no run yet, it must "start" one')
    if run != "start":
        for name in ("preset", "settings"):
            if name in table:
                raise where.error(
                    name,
                    f'a "{run}" step changes nothing of the run (it is already made): use '
                    'run = "start" for a fresh run with these settings',
                )
    restore_from = _integer(where, table, "restore_from")
    if run == "restore":
        if restore_from is None:
            raise where.error("restore_from", "missing: the number of an earlier start step")
        if restore_from not in starts:
            earlier = ", ".join(map(str, sorted(starts)))
            raise where.error(
                "restore_from",
                f'{restore_from} is not an earlier step with run = "start" (those are: {earlier})',
            )
    elif restore_from is not None:
        raise where.error("restore_from", f'only a "restore" step has one, this one is "{run}"')
    preset_name = _choice(where, table, "preset", PRESET_NAMES)
    settings = _settings(where, table)
    if run == "start":
        _build(where, preset_name or lesson_preset, lesson_settings, settings, top)
        starts.add(number)
    controls = table.get("controls", [])
    if not isinstance(controls, list):
        raise where.error("controls", f'{controls!r} is not a list: write ["alpha", "beta"]')
    for control in controls:
        if control not in ALL_CONTROLS or not isinstance(control, str):
            hint = _suggest(control, ALL_CONTROLS) if isinstance(control, str) else ""
            raise where.error(
                "controls",
                f"{control!r} is not a control{hint}; "
                f"use some of {', '.join(sorted(ALL_CONTROLS))}",
            )
    if len(set(controls)) != len(controls):
        raise where.error("controls", f"{controls!r} names a control twice")
    return LessonStep(
        title=title,
        notice=notice,
        run=run,
        preset=preset_name,
        settings=MappingProxyType({path: value for path, (_, value) in settings.items()}),
        restore_from=restore_from,
        highlight=_choice(where, table, "highlight", HIGHLIGHTS),
        controls=tuple(controls),
        speed=_choice(where, table, "speed", SPEED_LABELS),
    )


def _display_name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def _read(path: Path, top: _Where) -> str:
    """The file's text: a regular file of at most `MAX_FILE_BYTES`, UTF-8 (a byte order mark,
    as some editors write, is dropped). A pipe or device is refused unread (reading one could
    block or never end); errors name no server path (the page shows them to the class)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise top.error(None, "cannot be read: not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise top.error(
                None,
                f"{info.st_size:,} bytes, at most {MAX_FILE_BYTES:,}: a lesson is a few kilobytes",
            )
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)  # it may have grown since
    except OSError as err:
        raise top.error(None, f"cannot be read: {err.strerror or type(err).__name__}") from None
    if len(data) > MAX_FILE_BYTES:
        raise top.error(None, f"more than {MAX_FILE_BYTES:,} bytes: a lesson is a few kilobytes")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise top.error(
            None, f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})"
        ) from None


def load_lesson(path: Path) -> GuidedLesson:
    """The lesson in a TOML file (`LessonFileError` naming the step and field of a mistake)."""
    path = Path(path)
    top = _Where(_display_name(path))
    if not KEY_PATTERN.match(path.stem):
        raise top.error(
            None,
            f"the file name {path.stem!r} is the lesson's ?lesson= key: use lowercase letters, "
            "digits and single hyphens, e.g. alpha-beta.toml",
        )
    try:
        data = tomllib.loads(_read(path, top))
    except tomllib.TOMLDecodeError as err:
        text = str(err)
        found = re.search(r"\(at line (\d+), column (\d+)\)", text)
        line = int(found.group(1)) if found else None
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", text)
        raise LessonFileError(top.file, f"not valid TOML: {reason}", line=line) from None
    except RecursionError:  # tomllib reads nested arrays and tables recursively
        raise top.error(None, "not valid TOML: arrays or tables nested too deeply") from None
    _check_keys(top, data, _LESSON_FIELDS)
    title = _text(top, data, "title", TITLE_LIMIT)
    summary = _text(top, data, "summary", NOTICE_LIMIT)
    if "preset" not in data:
        raise top.error("preset", f"missing: use one of {', '.join(PRESET_NAMES)}")
    preset_name = _choice(top, data, "preset", PRESET_NAMES)
    assert preset_name is not None
    order = _integer(top, data, "order")
    settings = _settings(top, data)
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise top.error(
            "steps", "no steps: add at least one [[steps]] table with title, notice and run"
        )
    if len(steps) > MAX_STEPS:
        raise top.error("steps", f"{len(steps)} steps, at most {MAX_STEPS}: split the lesson")
    starts: set[int] = set()
    parsed = tuple(
        _step(top, number, table, preset_name, settings, starts)
        for number, table in enumerate(steps, start=1)
    )
    return GuidedLesson(
        key=path.stem,
        title=title,
        summary=summary,
        preset=preset_name,
        steps=parsed,
        settings=MappingProxyType({path: value for path, (_, value) in settings.items()}),
        order=order,
    )


def lesson_files(folder: Path = LESSON_FOLDER) -> list[Path]:
    """The lesson files in ``folder`` (``*.toml``) and those in `OTHER_FORMATS`, by name."""
    suffixes = (".toml", *OTHER_FORMATS)
    return sorted(path for path in Path(folder).glob("*") if path.suffix in suffixes)


def load_lessons(
    folder: Path = LESSON_FOLDER, *, errors: list[LessonFileError] | None = None
) -> dict[str, GuidedLesson]:
    """Every ``*.toml`` lesson in ``folder`` by key, in ``order`` (then by key).

    A bad file (or one in `OTHER_FORMATS`) raises its `LessonFileError`; with an ``errors``
    list, it is appended there and skipped instead, so one broken copy does not hide the other
    lessons.
    """
    lessons: list[GuidedLesson] = []
    for path in lesson_files(folder):
        try:
            if path.suffix != ".toml":
                raise _Where(_display_name(path)).error(
                    None,
                    f"not a lesson: lessons are TOML files ({path.stem}.toml), as README.md in "
                    "the folder shows",
                )
            lessons.append(load_lesson(path))
        except LessonFileError as err:
            if errors is None:
                raise
            errors.append(err)
    lessons.sort(key=lambda lesson: (lesson.order is None, lesson.order or 0, lesson.key))
    return {lesson.key: lesson for lesson in lessons}
