"""Broken lesson files: every way a teacher's lesson file can be
wrong, in the lessons folder beside a good lesson, read by the catalogue and by the live page.

Each broken file is left out with one error naming the file, and the step and field where the
mistake is one; its ``?lesson=`` link says that error on the page (it said only "use one of
..."); the good lesson and the rest of the dashboard keep working. No message names a server
path. Before: a link to nothing (or a file removed while the folder was listed) crashed the live
page for every link with a lesson, deep nesting raised RecursionError, a pipe hung the page, a
file of any size was read whole on every page load, and a lesson saved with a byte order mark
or as YAML was refused as bad TOML or silently ignored.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rdqn.dashboard import lessons as catalogue
from rdqn.dashboard.guided import LESSON_FOLDER
from rdqn.dashboard.lesson_file import MAX_FILE_BYTES
from tests.app.conftest import isolated_app  # noqa: F401 - autouse: private RDQN_HOME

APP = str(Path(__file__).resolve().parents[2] / "app.py")
GOOD = (LESSON_FOLDER / "alpha.toml").read_text(encoding="utf-8")
STEP1 = 'step 1 ("Move α")'


def edited(old: str, new: str) -> str:
    assert old in GOOD, old
    return GOOD.replace(old, new, 1)


def text(content: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(content, encoding="utf-8")


def dangling(path: Path) -> None:
    path.symlink_to(path.parent / "deleted-long-ago.toml")


def fifo(path: Path) -> None:
    os.mkfifo(path)


# name -> (how the file is made, the start of its error after "lessons/<name>")
CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "bad-toml.toml": (text(edited('run = "start"', "run = start")), ", line 10: not valid TOML"),
    "yaml-in-toml.toml": (
        text("title: Move alpha\nsteps:\n  - run: start\n"),
        ", line 1: not valid TOML",
    ),
    "lesson.yaml": (
        text("title: Move alpha\nsteps:\n  - run: start\n"),
        ": not a lesson: lessons are TOML files (lesson.toml)",
    ),
    "no-steps.toml": (text(GOOD[: GOOD.index("[[steps]]")]), ', field "steps": no steps'),
    "unknown-field.toml": (
        text(edited('run = "start"', 'run = "start"\ncolour = "red"')),
        f', {STEP1}, field "colour": unknown field',
    ),
    "alpha-too-big.toml": (
        text(edited('run = "start"', 'run = "start"\nsettings = { alpha = 1.5 }')),
        f', {STEP1}, field "settings.alpha": replay.alpha must be in [0, 1], got 1.5',
    ),
    "alpha-negative.toml": (
        text(edited('run = "start"', 'run = "start"\nsettings = { alpha = -0.1 }')),
        f', {STEP1}, field "settings.alpha": replay.alpha must be in [0, 1], got -0.1',
    ),
    "alpha-nan.toml": (
        text(edited('run = "start"', 'run = "start"\nsettings = { alpha = nan }')),
        f', {STEP1}, field "settings.alpha": replay.alpha must be in [0, 1], got nan',
    ),
    "missing.toml": (dangling, ": cannot be read: No such file or directory"),
    "empty.toml": (text(""), ', field "title": missing'),
    "blank.toml": (text("\n \n\t\n"), ', field "title": missing'),
    "huge.toml": (
        text(GOOD + "#" * MAX_FILE_BYTES + "\n"),
        f": {len(GOOD.encode()) + MAX_FILE_BYTES + 1:,} bytes, at most {MAX_FILE_BYTES:,}",
    ),
    "a-pipe.toml": (fifo, ": cannot be read: not a regular file"),
    "a-folder.toml": (lambda path: path.mkdir(), ": cannot be read: not a regular file"),
    "deep.toml": (
        text("title = " + "[" * 5000 + "]" * 5000 + "\n"),
        ": not valid TOML: arrays or tables nested too deeply",
    ),
    "latin-1.toml": (
        lambda path: path.write_bytes(GOOD.replace("α", "a").encode() + "# é\n".encode("latin-1")),
        f": not UTF-8 text (byte 0xe9 at offset {len(GOOD.replace('α', 'a').encode()) + 2})",
    ),
}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lessons folder holding the shipped alpha lesson, read by the dashboard."""
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    shutil.copy(LESSON_FOLDER / "alpha.toml", lessons / "alpha.toml")
    monkeypatch.setattr(catalogue, "LESSON_FOLDER", lessons)
    return lessons


def read_catalogue() -> tuple[dict, tuple]:
    """`rdqn.dashboard.lessons.lessons()`, which must not hang (a pipe would, read)."""
    result: list = []
    reader = threading.Thread(target=lambda: result.append(catalogue.lessons()), daemon=True)
    reader.start()
    reader.join(20)
    assert result, "reading the lesson folder did not finish"
    return result[0]


@pytest.mark.parametrize("name", list(CASES))
def test_a_broken_file_is_left_out_with_one_error_naming_it(
    folder: Path, tmp_path: Path, name: str
) -> None:
    make, error = CASES[name]
    make(folder / name)
    found, errors = read_catalogue()
    assert list(found) == ["alpha"]  # the good lesson still loads
    assert [str(e) for e in errors] == [str(errors[0])]
    message = str(errors[0])
    assert message.startswith(f"lessons/{name}{error}"), message
    assert str(tmp_path) not in message and "Traceback" not in message


def test_a_lesson_saved_with_a_byte_order_mark_loads(folder: Path) -> None:
    """Some editors on Windows start UTF-8 files with one: it read as 'line 1: not valid TOML'."""
    (folder / "with-bom.toml").write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    found, errors = read_catalogue()
    assert not errors and found["with-bom"].title == found["alpha"].title


def test_a_file_removed_and_restored_is_read_again(folder: Path) -> None:
    dangling(folder / "gone.toml")
    assert len(read_catalogue()[1]) == 1
    (folder / "gone.toml").unlink()
    (folder / "gone.toml").write_text(GOOD, encoding="utf-8")
    found, errors = read_catalogue()
    assert sorted(found) == ["alpha", "gone"] and not errors


# ------------------------------------------------------------------------------- the pages
def notes(at: AppTest) -> str:
    return "\n".join(e.value for kind in (at.info, at.warning, at.error) for e in kind).replace(
        "\\", ""
    )


def test_every_broken_lesson_link_names_its_mistake_and_the_dashboard_works(
    folder: Path, tmp_path: Path
) -> None:
    """All the broken files at once, beside the good lesson: each ``?lesson=`` link says its
    file's error on the live page (the key is the file name); the good lesson still opens;
    every page draws."""
    for name, (make, _) in CASES.items():
        make(folder / name)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    for name, (_, error) in CASES.items():
        key = name.removesuffix(".toml").removesuffix(".yaml")
        at.query_params["lesson"] = key
        at.switch_page("pages/live.py").run()
        assert not at.exception, (name, at.exception)
        shown = notes(at)
        assert f"ignored lesson='{key}': lessons/{name}{error}" in shown, (name, shown)
        assert str(tmp_path) not in shown
        assert not at.button(key="live.start").disabled  # the page goes on without the lesson
    at.query_params["lesson"] = "alpha"
    at.switch_page("pages/live.py").run()
    assert not at.exception
    assert at.session_state["live.lesson"] == "alpha"
    assert len(at.warning) >= len(CASES)  # in a lesson, the files that did not load are listed
    for page in ("home", "internals", "sum_tree", "by_hand", "compare", "runs"):
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, page


def test_a_lesson_that_breaks_while_it_is_taught_says_why(folder: Path) -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lesson"] = "alpha"
    at.run()
    at.switch_page("pages/live.py").run()
    assert at.session_state["live.lesson"] == "alpha" and not at.exception
    path = folder / "alpha.toml"
    path.write_text(GOOD.replace('run = "start"', 'run = "begin"'), encoding="utf-8")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    at.run()
    assert not at.exception
    assert (
        f"ignored lesson='alpha': lessons/alpha.toml, {STEP1}, field \"run\": 'begin' is not "
        "allowed" in notes(at)
    )
    assert not at.button(key="live.start").disabled
