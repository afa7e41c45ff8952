"""The admin box in a real browser: a student's run of wrong tokens brakes that student's browser
(`rdqn.dashboard.attempts.AdminBrake`) and says how long to wait, while the teacher's right token,
typed in another browser at the same time, is checked and works."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import (
    ARTIFACTS,
    act_until,
    another_browser,
    assert_no_exception,
    run_on_screen,
    saying_what_the_page_shows,
    start_a_run,
    streamlit_server,
    wait_until_shown,
)

TOKEN = "teacher-only-7d41"
_BOX_SHOWN = """() => {
    const box = document.querySelector('input[aria-label="Admin token"]');
    return box !== null && box.checkVisibility();
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("rdqn-home")
    with streamlit_server(home, "server-test_admin.log", RDQN_ADMIN_TOKEN=TOKEN) as (url, _):
        yield url


def enter(tab: Page, token: str, *, accepted: bool = False) -> None:
    """Type a token into the admin box and return once the server has checked it: it empties
    the box then. (Waiting for the message instead would race ahead: "That is not the admin
    token." stays on screen from the guess before, and guesses typed before the server has seen
    the last one may reach it as one.)"""
    box = tab.get_by_label("Admin token", exact=True)
    toggle = tab.get_by_text("Admin", exact=True)
    wait_until_shown(tab, toggle)
    if not box.is_visible():  # a click lost to the page's first-load rerun is made again
        act_until(tab, toggle.click, _BOX_SHOWN, "opening the Admin box")
    box.fill(token)
    box.press("Enter")
    if accepted:  # the box gives way to admin mode
        tab.get_by_role("button", name="Leave admin mode").wait_for()
    else:
        expect(box).to_have_value("", timeout=60_000)


def test_ten_wrong_tokens_from_a_student_never_lock_the_teacher_out(
    page: Page, server: str
) -> None:
    student = another_browser(page, 1400, 1000)
    student.goto(f"{server}/runs")
    for guess in range(10):
        enter(student, f"guess-{guess}")
        student.get_by_text("That is not the admin token.").wait_for()
    enter(student, TOKEN)  # even the right token: this browser is braked, it is not checked
    alert = student.get_by_text("Too many wrong admin tokens from this browser")
    alert.wait_for()
    assert "Try again in" in alert.inner_text()
    assert student.get_by_role("button", name="Leave admin mode").count() == 0
    assert_no_exception(student)
    student.screenshot(path=str(ARTIFACTS / "admin-braked.png"))

    page.goto(f"{server}/runs")  # the teacher, in another browser, meanwhile
    enter(page, TOKEN, accepted=True)
    page.get_by_text("this session may stop and delete any run").wait_for()
    assert_no_exception(page)
    student.context.close()


def test_the_teachers_console_pauses_a_students_run(page: Page, server: str) -> None:
    """The admin finds the console in the sidebar once admin, sees a student's run there, and
    pauses it: the student's page says so. Students have no such page."""
    student = another_browser(page, 1280, 720)
    start_a_run(student, server)
    run_id = run_on_screen(student)
    assert student.get_by_role("link", name="Teacher's console").count() == 0
    teacher = another_browser(page, 1400, 1000)
    teacher.goto(f"{server}/runs")
    enter(teacher, TOKEN, accepted=True)
    teacher.get_by_role("link", name="Teacher's console").click()
    table = teacher.locator('[data-testid="stDataFrame"]')
    with saying_what_the_page_shows(teacher):
        teacher.get_by_text("Student runs (1)").wait_for()
        table.wait_for()
    teacher.get_by_role("button", name="Pause all student runs").click()
    teacher.get_by_text("Paused 1 run.").wait_for()
    student.locator('[data-testid="stProgress"]', has_text=f"paused · run {run_id}").wait_for()
    teacher.screenshot(path=str(ARTIFACTS / "teachers-console.png"))
    assert_no_exception(teacher)
    assert_no_exception(student)
    for tab in (student, teacher):
        tab.context.close()
