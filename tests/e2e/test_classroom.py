"""Browser tests of the classroom flows: the first screen at 1280x720, projector mode, a lesson
that lasts the session."""

from __future__ import annotations

import re
import time

from playwright.sync_api import Page

from tests.e2e.browser import ARTIFACTS, assert_no_exception, start_a_run


def _box(page: Page, selector: str, text: str) -> dict[str, float]:
    """Where an element is drawn (retried: the live view redraws every second)."""
    element = page.locator(selector, has_text=text).first
    for _ in range(20):
        element.wait_for()
        box = element.bounding_box()
        if box is not None:
            return box
        time.sleep(0.25)
    raise AssertionError(f"{selector} with {text!r} is not drawn on the page")


def test_the_first_screen_at_1280x720_holds_the_controls_and_the_reward_curve(
    page: Page, server: str
) -> None:
    tab = page.context.browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    tab.set_default_timeout(60_000)
    start_a_run(tab, server)
    tab.locator(".gtitle", has_text="Episode return").wait_for()
    for selector, text in (
        ('[data-testid="stSlider"]', "prioritization"),
        ('[data-testid="stButton"]', "Pause"),
        ('[data-testid="stProgress"]', "running"),
    ):
        assert _box(tab, selector, text)["y"] >= 0
        assert _box(tab, selector, text)["y"] + _box(tab, selector, text)["height"] <= 720
    chart = _box(tab, '[data-testid="stPlotlyChart"]', "Episode return")
    assert chart["y"] + chart["height"] <= 720, f"the reward curve ends below the fold: {chart}"
    tab.screenshot(path=str(ARTIFACTS / "live-1280x720.png"))
    tab.get_by_role("button", name="Pause").click()
    tab.context.close()


def _tick_font_sizes(page: Page) -> list[float]:
    return page.evaluate(
        """() => [...document.querySelectorAll('.xtick text, .ytick text')]
                 .map(t => parseFloat(getComputedStyle(t).fontSize))"""
    )


def test_projector_mode_from_the_url_lasts_across_pages(page: Page, server: str) -> None:
    tab = page.context.browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    tab.set_default_timeout(60_000)
    tab.goto(f"{server}/sum_tree?projector=1")
    tab.locator(".xtick text").first.wait_for()
    assert tab.get_by_role("switch", name="Projector mode").is_checked()
    sizes = _tick_font_sizes(tab)
    assert sizes and min(sizes) >= 16, sizes
    tab.screenshot(path=str(ARTIFACTS / "projector-sum-tree.png"))

    tab.get_by_role("link", name="Live training").first.click()
    tab.wait_for_url(re.compile(r".*/live\?.*projector=1.*"))
    tab.get_by_role("button", name="Start", exact=True).click()
    tab.locator(".xtick text").first.wait_for()
    assert min(_tick_font_sizes(tab)) >= 16
    tab.get_by_text("Projector mode", exact=True).click()  # off again: the theme's ticks
    tab.wait_for_function("() => !location.search.includes('projector')")
    tab.wait_for_function(
        """() => [...document.querySelectorAll('.xtick text')]
                 .every(t => parseFloat(getComputedStyle(t).fontSize) < 16)"""
    )
    assert_no_exception(tab)
    tab.get_by_role("button", name="Pause").click()
    tab.context.close()


def test_a_lesson_lasts_the_session_across_pages(page: Page, server: str) -> None:
    tab = page.context.browser.new_context().new_page()
    tab.set_default_timeout(60_000)
    tab.goto(f"{server}/live?lesson=alpha")
    tab.get_by_text("Lesson: How strongly to prioritize").wait_for()
    assert not tab.locator('[data-testid="stSlider"]', has_text="IS correction").count()
    tab.get_by_role("link", name="Sum tree").first.click()
    tab.get_by_role("button", name="Draw a batch").first.wait_for()
    tab.get_by_role("link", name="Live training").first.click()
    tab.get_by_text("Lesson: How strongly to prioritize").wait_for()
    assert "lesson=alpha" in tab.url
    assert not tab.locator('[data-testid="stSlider"]', has_text="IS correction").count()
    tab.get_by_role("button", name="Leave the lesson").click()
    tab.locator('[data-testid="stSlider"]', has_text="IS correction").wait_for()
    assert "lesson=" not in tab.url
    assert_no_exception(tab)
    tab.context.close()
