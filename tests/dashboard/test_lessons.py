"""The lesson catalogue: a lesson dropped into or edited in the folder shows on the next page
load; a broken file is left out with its error, the others stay."""

import os
import shutil
from pathlib import Path

import pytest

from rdqn.dashboard import lessons as catalogue
from rdqn.dashboard.guided import LESSON_FOLDER


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(catalogue, "LESSON_FOLDER", tmp_path)
    shutil.copy(LESSON_FOLDER / "alpha.toml", tmp_path / "alpha.toml")
    return tmp_path


def _touch_later(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))


def test_a_new_or_edited_lesson_shows_on_the_next_load(folder: Path) -> None:
    found, errors = catalogue.lessons()
    assert list(found) == ["alpha"] and not errors
    copy = folder / "my-alpha.toml"
    copy.write_text((folder / "alpha.toml").read_text().replace("How strongly", "How much"))
    found, _ = catalogue.lessons()
    assert found["my-alpha"].title == "How much to prioritize"
    copy.write_text(copy.read_text().replace("How much", "How far"))
    _touch_later(copy)
    assert catalogue.lessons()[0]["my-alpha"].title == "How far to prioritize"


def test_a_broken_lesson_is_left_out_with_its_error(folder: Path) -> None:
    (folder / "broken.toml").write_text('title = "x"\nsummary = "y"\npreset = "nope"\n')
    found, errors = catalogue.lessons()
    assert list(found) == ["alpha"]
    assert len(errors) == 1 and "broken.toml" in str(errors[0]) and "preset" in str(errors[0])
