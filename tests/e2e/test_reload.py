"""A reload keeps a student's run (issue 11: nothing lost): the browser's owner cookie makes the
reloaded page the same owner, so the run goes on and is back on screen; another browser is
never offered it."""

from __future__ import annotations

import time

from playwright.sync_api import Page

from tests.e2e.browser import (
    another_browser,
    assert_no_exception,
    progress_text,
    run_on_screen,
    start_a_run,
)


def _page_drawn(tab: Page) -> None:
    """Until the live page is drawn to its end (its resume list, if any, comes before)."""
    tab.get_by_text("Curve smoothing (EMA)").wait_for()


def test_a_reload_keeps_the_run_and_another_browser_is_not_offered_it(
    page: Page, server: str
) -> None:
    browser = page.context.browser
    assert browser is not None
    context = browser.new_context()
    tab = context.new_page()
    tab.set_default_timeout(60_000)
    start_a_run(tab, server)
    run_id = run_on_screen(tab)
    cookie = {c["name"]: c for c in context.cookies()}.get("rdqn_owner")
    assert cookie is not None and len(cookie["value"]) == 24, context.cookies()
    assert cookie["value"] not in tab.url and cookie["sameSite"] == "Strict"

    tab.reload()
    tab.locator('[data-testid="stProgress"]', has_text="running").first.wait_for()
    assert run_on_screen(tab) == run_id
    time.sleep(4.5)  # past the grace (RDQN_RELEASE_GRACE=3 on the test server) after a reload
    assert progress_text(tab).startswith("running"), progress_text(tab)
    assert run_on_screen(tab) == run_id
    assert tab.get_by_role("button", name="Pause").is_enabled()
    assert_no_exception(tab)

    tab.close()  # the browser's last tab: its run stops after the grace period
    time.sleep(4.5)
    again = context.new_page()
    again.set_default_timeout(60_000)
    again.goto(f"{server}/live")
    again.get_by_text(f"Run {run_id} (").wait_for()  # this browser is offered it
    _page_drawn(again)

    other = another_browser(page)
    other.goto(f"{server}/live")
    _page_drawn(other)
    assert other.get_by_text(f"Run {run_id} (").count() == 0
    assert_no_exception(other)
    other.context.close()
    context.close()
