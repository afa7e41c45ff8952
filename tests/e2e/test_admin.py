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
