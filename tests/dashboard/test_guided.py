"""Tests for rdqn.dashboard.guided and rdqn.dashboard.lesson_file: guided lessons read from TOML
files, and their error messages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rdqn.config import PRESET_NAMES
from rdqn.dashboard.guided import (
    ALL_CONTROLS,
    HIGHLIGHTS,
    LESSON_FOLDER,
    SPEED_LABELS,
    GuidedLesson,
)
from rdqn.dashboard.lesson_file import LessonFileError, load_lesson, load_lessons
from rdqn.dashboard.params import check_setting

SHIPPED = ("why-prioritize", "alpha-beta", "schemes")
BASE = """\
title = "Demo"
summary = "A lesson for the tests."
preset = "per-notebook"

[[steps]]
title = "Uniform first"
notice = "Watch the curve."
run = "start"
settings = { alpha = 0.0, seed = 1, steps = 5000 }
highlight = "reward"
controls = ["alpha"]

[[steps]]
title = "Keep watching"
notice = "Still going."
run = "keep"

[[steps]]
title = "Back to uniform"
notice = "Again."
run = "restore"
restore_from = 1
"""


def write(tmp_path: Path, text: str, name: str = "demo") -> Path:
    folder = tmp_path / "lessons"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def edited(old: str, new: str) -> str:
    assert BASE.count(old) == 1, old
    return BASE.replace(old, new)


# ----------------------------------------------------------------------------- shipped lessons
def test_every_shipped_lesson_loads_and_every_run_builds() -> None:
    lessons = load_lessons()
    for key, lesson in lessons.items():
        assert lesson.key == key
        assert lesson.steps[0].run == "start"
        for number in range(1, len(lesson.steps) + 1):
            lesson.config(number)
    for key in SHIPPED:
        lesson = lessons[key]
        assert 4 <= len(lesson.steps) <= 6, key
        for number in range(1, len(lesson.steps) + 1):
            # Something to see within a minute at ~1,000 env steps/s (assets/lessons/README.md).
            assert lesson.config(number).train.total_steps <= 60_000, (key, number)


def test_shipped_lessons_keep_the_old_lesson_links() -> None:
    """``?lesson=alpha``, ``alpha-beta`` and ``schemes`` still name lessons."""
    assert {"alpha", "alpha-beta", "schemes"} <= set(load_lessons())


def test_shipped_lessons_are_listed_in_their_order() -> None:
    assert tuple(load_lessons())[:3] == SHIPPED


def test_the_format_readme_is_shipped_beside_the_lessons() -> None:
    text = (LESSON_FOLDER / "README.md").read_text(encoding="utf-8")
    for name in (*HIGHLIGHTS, *ALL_CONTROLS, "restore_from", "full speed"):
        assert name in text


def test_speed_labels_are_the_live_pages() -> None:
    from rdqn.dashboard.state import SPEEDS

    assert tuple(SPEEDS) == SPEED_LABELS


@pytest.mark.slow  # trains or starts a process for seconds
def test_loading_lessons_does_not_import_streamlit() -> None:
    code = (
        "import sys, rdqn.dashboard.lesson_file as f; f.load_lessons(); "
        "print('streamlit' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path.cwd()
    )
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------- the model
def test_a_lesson_reads_as_written(tmp_path: Path) -> None:
    lesson = load_lesson(write(tmp_path, BASE))
    assert isinstance(lesson, GuidedLesson)
    assert (lesson.key, lesson.title, lesson.preset, lesson.order) == (
        "demo",
        "Demo",
        "per-notebook",
        None,
    )
    first, keep, restore = lesson.steps
    assert first.settings == {"replay.alpha": 0.0, "seed": 1, "train.total_steps": 5000}
    assert (first.run, first.preset, first.highlight, first.controls, first.speed) == (
        "start",
        None,
        "reward",
        ("alpha",),
        None,
    )
    assert (keep.run, dict(keep.settings), keep.controls, keep.highlight) == ("keep", {}, (), None)
    assert (restore.run, restore.restore_from) == ("restore", 1)
    assert lesson.step(3) is restore
    with pytest.raises(IndexError, match="demo has steps 1 to 3, not 4"):
        lesson.step(4)


def test_the_run_on_screen_at_each_step(tmp_path: Path) -> None:
    text = BASE.replace(
        'preset = "per-notebook"\n', 'preset = "per-notebook"\nsettings = { seed = 7 }\n', 1
    )
    text += """
[[steps]]
title = "Rank-based"
notice = "Another run."
run = "start"
preset = "paper"
settings = { scheme = "rank" }

[[steps]]
title = "Watch it"
notice = "It goes on."
run = "keep"
speed = "full speed"
"""
    lesson = load_lesson(write(tmp_path, text))
    assert [lesson.run_step(n) for n in range(1, 6)] == [1, 1, 1, 4, 4]
    assert lesson.run_setup(2) == (
        "per-notebook",
        {"seed": 1, "replay.alpha": 0.0, "train.total_steps": 5000},
    )
    assert lesson.run_setup(5) == ("paper", {"seed": 7, "replay.scheme": "rank"})
    config = lesson.config(3)
    assert (config.replay.alpha, config.seed, config.train.total_steps) == (0.0, 1, 5000)
    assert lesson.steps[4].speed == "full speed"


def test_settings_by_url_name_dotted_name_or_toml_table_are_the_same(tmp_path: Path) -> None:
    texts = [
        'settings = { alpha = 0.5, env = "rdqn/BlindCliffwalk-v0" }',
        'settings = { "replay.alpha" = 0.5, "env.id" = "rdqn/BlindCliffwalk-v0" }',
        'settings = { replay.alpha = 0.5, env.id = "rdqn/BlindCliffwalk-v0" }',
        'settings = { replay = { alpha = 0.5 }, env = { id = "rdqn/BlindCliffwalk-v0" } }',
    ]
    for text in texts:
        old = "settings = { alpha = 0.0, seed = 1, steps = 5000 }"
        lesson = load_lesson(write(tmp_path, edited(old, text)))
        assert lesson.steps[0].settings == {"replay.alpha": 0.5, "env.id": "rdqn/BlindCliffwalk-v0"}


def test_a_table_valued_setting_stays_a_table(tmp_path: Path) -> None:
    old = "settings = { alpha = 0.0, seed = 1, steps = 5000 }"
    new = 'settings = { env.id = "rdqn/BlindCliffwalk-v0", env.kwargs = { n = 6 } }'
    lesson = load_lesson(write(tmp_path, edited(old, new)))
    assert lesson.steps[0].settings["env.kwargs"] == {"n": 6}
    assert lesson.config(1).env.kwargs == {"n": 6}


def test_lessons_are_listed_by_order_then_key(tmp_path: Path) -> None:
    write(tmp_path, BASE, "zeta")
    write(tmp_path, BASE, "alpha")
    write(tmp_path, "order = 2\n" + BASE, "late")
    write(tmp_path, "order = 1\n" + BASE, "early")
    assert list(load_lessons(tmp_path / "lessons")) == ["early", "late", "alpha", "zeta"]


def test_a_bad_file_can_be_set_aside_so_the_others_still_load(tmp_path: Path) -> None:
    write(tmp_path, BASE, "good")
    write(tmp_path, edited('run = "keep"', 'run = "go"'), "bad")
    with pytest.raises(LessonFileError, match="bad.toml"):
        load_lessons(tmp_path / "lessons")
    errors: list[LessonFileError] = []
    assert list(load_lessons(tmp_path / "lessons", errors=errors)) == ["good"]
    assert len(errors) == 1 and errors[0].file == "lessons/bad.toml"
    assert (errors[0].step, errors[0].step_title, errors[0].field) == (2, "Keep watching", "run")


# ----------------------------------------------------------------------------- errors
STEP1 = 'lessons/demo.toml, step 1 ("Uniform first")'
STEP2 = 'lessons/demo.toml, step 2 ("Keep watching")'
STEP3 = 'lessons/demo.toml, step 3 ("Back to uniform")'
PRESETS = ", ".join(f'"{name}"' for name in PRESET_NAMES)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        pytest.param(
            'title = "Demo"',
            'title = "Demo"\ntitel = "Demo"',
            'lessons/demo.toml, field "titel": unknown field (did you mean "title"?); the fields '
            "are title, summary, preset, order, settings, steps",
            id="unknown-top-level-key",
        ),
        pytest.param(
            'highlight = "reward"',
            'hightlight = "reward"',
            f'{STEP1}, field "hightlight": unknown field (did you mean "highlight"?); the fields '
            "are title, notice, run, preset, settings, restore_from, highlight, controls, speed",
            id="unknown-step-key",
        ),
        pytest.param(
            'run = "keep"',
            'run = "continue"',
            f'{STEP2}, field "run": \'continue\' is not allowed; use one of "start", "keep", '
            '"restore"',
            id="bad-run-kind",
        ),
        pytest.param(
            'notice = "Still going."\nrun = "keep"',
            'notice = "Still going."',
            f'{STEP2}, field "run": missing: use one of start, keep, restore',
            id="missing-run-kind",
        ),
        pytest.param(
            "restore_from = 1",
            "restore_from = 4",
            f'{STEP3}, field "restore_from": 4 is not an earlier step with run = "start" '
            "(those are: 1)",
            id="restore-from-a-later-step",
        ),
        pytest.param(
            "restore_from = 1",
            "restore_from = 2",
            f'{STEP3}, field "restore_from": 2 is not an earlier step with run = "start" '
            "(those are: 1)",
            id="restore-from-a-keep-step",
        ),
        pytest.param(
            "restore_from = 1\n",
            "",
            f'{STEP3}, field "restore_from": missing: the number of an earlier start step',
            id="restore-without-a-step",
        ),
        pytest.param(
            'controls = ["alpha"]',
            'controls = ["alpha"]\nrestore_from = 1',
            f'{STEP1}, field "restore_from": only a "restore" step has one, this one is "start"',
            id="restore-from-on-a-start-step",
        ),
        pytest.param(
            'run = "start"',
            'run = "keep"',
            f'{STEP1}, field "run": "keep": the first step has no run yet, it must "start" one',
            id="first-step-keeps",
        ),
        pytest.param(
            "alpha = 0.0",
            "alpha = 1.7",
            f'{STEP1}, field "settings.alpha": replay.alpha must be in [0, 1], got 1.7',
            id="setting-out-of-range",
        ),
        pytest.param(
            "seed = 1,",
            "seed = 1.5,",
            f'{STEP1}, field "settings.seed": seed must be an integer from 0 to 2,147,483,647, '
            "got 1.5",
            id="setting-of-the-wrong-type",
        ),
        pytest.param(
            "steps = 5000",
            "steps = 9000000",
            f'{STEP1}, field "settings.steps": train.total_steps must be at most 5,000,000 on '
            "this server, got 9,000,000",
            id="setting-beyond-the-servers-limit",
        ),
        pytest.param(
            "seed = 1,",
            "sed = 1,",
            f'{STEP1}, field "settings.sed": no such setting (did you mean "seed"?); use a URL '
            "name (env, scheme, alpha, beta, seed, steps, warmup, capacity, batch, window, burnin, "
            "overlap, seq, eta, stored, mode, lr, gamma, target, eval) or a config field such as "
            "replay.alpha",
            id="unknown-setting",
        ),
        pytest.param(
            "seed = 1,",
            "seed = 1, replay.alpha = 0.2,",
            f'{STEP1}, field "settings.replay.alpha": set twice (as "alpha" and "replay.alpha")',
            id="setting-given-twice",
        ),
        pytest.param(
            "steps = 5000",
            "steps = 5000, capacity = 64, batch = 128",
            f'{STEP1}, field "settings.batch": replay.batch_size must be <= capacity (64), got 128',
            id="settings-that-do-not-build-together",
        ),
        pytest.param(
            'preset = "per-notebook"',
            'preset = "notebook"',
            "lessons/demo.toml, field \"preset\": 'notebook' is not allowed (did you mean "
            f'"per-notebook"?); use one of {PRESETS}',
            id="bad-lesson-preset",
        ),
        pytest.param(
            'run = "start"',
            'run = "start"\npreset = "papr"',
            f'{STEP1}, field "preset": \'papr\' is not allowed (did you mean "paper"?); use one '
            f"of {PRESETS}",
            id="bad-step-preset",
        ),
        pytest.param(
            'highlight = "reward"',
            'highlight = "rewards"',
            f'{STEP1}, field "highlight": \'rewards\' is not allowed (did you mean "reward"?); '
            'use one of "reward", "loss", "controls", "metrics"',
            id="bad-highlight",
        ),
        pytest.param(
            'controls = ["alpha"]',
            'controls = ["alfa"]',
            f'{STEP1}, field "controls": \'alfa\' is not a control (did you mean "alpha"?); '
            "use some of alpha, beta, scheme, settings",
            id="bad-control",
        ),
        pytest.param(
            'controls = ["alpha"]',
            'controls = "alpha"',
            f'{STEP1}, field "controls": \'alpha\' is not a list: write ["alpha", "beta"]',
            id="controls-not-a-list",
        ),
        pytest.param(
            'controls = ["alpha"]',
            'controls = ["alpha"]\nspeed = "fast"',
            f'{STEP1}, field "speed": \'fast\' is not allowed; use one of "1 step/s", '
            '"5 steps/s", "20 steps/s", "100 steps/s", "1,000 steps/s", "full speed"',
            id="bad-speed",
        ),
        pytest.param(
            'run = "keep"',
            'run = "keep"\nsettings = { seed = 2 }',
            f'{STEP2}, field "settings": a "keep" step changes nothing of the run (it is already '
            'made): use run = "start" for a fresh run with these settings',
            id="keep-with-settings",
        ),
        pytest.param(
            'run = "restore"',
            'run = "restore"\npreset = "paper"',
            f'{STEP3}, field "preset": a "restore" step changes nothing of the run (it is '
            'already made): use run = "start" for a fresh run with these settings',
            id="restore-with-a-preset",
        ),
        pytest.param(
            'notice = "Watch the curve."\n',
            "",
            f'{STEP1}, field "notice": missing: write it as text in quotes',
            id="missing-notice",
        ),
        pytest.param(
            'notice = "Watch the curve."',
            f'notice = "{"x" * 601}"',
            f'{STEP1}, field "notice": 601 characters, at most 600 (it is read off a projector)',
            id="notice-too-long",
        ),
        pytest.param(
            'title = "Keep watching"',
            "title = 3",
            'lessons/demo.toml, step 2, field "title": 3 is not text: write it in quotes, not '
            "empty",
            id="step-title-not-text",
        ),
        pytest.param(
            'run = "keep"',
            "run = keep",
            "lessons/demo.toml, line 16: not valid TOML: Invalid value",
            id="toml-syntax-error",
        ),
        pytest.param(
            BASE[BASE.index("[[steps]]") :],
            "",
            'lessons/demo.toml, field "steps": no steps: add at least one [[steps]] table with '
            "title, notice and run",
            id="no-steps",
        ),
        pytest.param(
            '[[steps]]\ntitle = "Uniform first"',
            '[steps]\ntitle = "Uniform first"',
            "lessons/demo.toml, line",
            id="steps-as-a-single-table",
        ),
        pytest.param(
            'preset = "per-notebook"',
            'preset = "per-notebook"\norder = "first"',
            "lessons/demo.toml, field \"order\": 'first' is not a whole number",
            id="order-not-a-number",
        ),
    ],
)
def test_a_bad_lesson_names_file_step_and_field(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    assert old in BASE, old
    path = write(tmp_path, BASE.replace(old, new, 1))
    with pytest.raises(LessonFileError) as caught:
        load_lesson(path)
    assert str(caught.value).startswith(message), str(caught.value)


def test_a_single_steps_table_is_not_a_list_of_steps(tmp_path: Path) -> None:
    text = BASE[: BASE.index("[[steps]]")] + '[steps]\ntitle = "x"\n'
    with pytest.raises(LessonFileError, match=r'field "steps": no steps: add at least one'):
        load_lesson(write(tmp_path, text))


def test_too_many_steps(tmp_path: Path) -> None:
    keep = '\n[[steps]]\ntitle = "More"\nnotice = "More."\nrun = "keep"\n'
    with pytest.raises(LessonFileError, match=r'field "steps": 15 steps, at most 12'):
        load_lesson(write(tmp_path, BASE + keep * 12))


def test_lesson_settings_that_do_not_fit_a_steps_preset_name_the_step(tmp_path: Path) -> None:
    text = edited('preset = "per-notebook"', 'preset = "e14"\nsettings = { window = 8 }')
    text = text.replace('run = "start"', 'run = "start"\npreset = "paper"', 1)
    with pytest.raises(LessonFileError) as caught:
        load_lesson(write(tmp_path, text))
    assert str(caught.value) == (
        'lessons/demo.toml, field "settings.window": replay.window must be 1 for the linear '
        "network (only the recurrent network reads windows), got 8 (with step 1's preset "
        '"paper")'
    )


def test_a_file_name_that_is_no_url_key(tmp_path: Path) -> None:
    with pytest.raises(LessonFileError, match=r"lessons/Alpha Beta.toml: the file name"):
        load_lesson(write(tmp_path, BASE, "Alpha Beta"))


def test_a_toml_error_gives_its_line(tmp_path: Path) -> None:
    with pytest.raises(LessonFileError) as caught:
        load_lesson(write(tmp_path, edited('run = "keep"', "run = keep")))
    assert (caught.value.line, caught.value.step, caught.value.field) == (16, None, None)


# ----------------------------------------------------------------------------- check_setting
def test_check_setting_reads_text_as_urls_do_and_typed_values_strictly() -> None:
    assert check_setting("replay.alpha", "0.5") == 0.5
    assert check_setting("replay.alpha", 1) == 1.0 and isinstance(
        check_setting("replay.alpha", 1), float
    )
    assert check_setting("seed", 3) == 3
    assert check_setting("agent.double_dqn", True) is True
    assert check_setting("env.kwargs", {"n": 6}) == {"n": 6}
    with pytest.raises(ValueError, match="seed must be an integer"):
        check_setting("seed", 2.0)
    with pytest.raises(ValueError, match="replay.alpha must be in"):
        check_setting("replay.alpha", True)
    with pytest.raises(ValueError, match="at most 1,000,000 on this server"):
        check_setting("replay.capacity", 2_000_000)
