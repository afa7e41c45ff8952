"""Browser tests of the classroom flows: the first screen at 1280x720, projector mode, a lesson
that lasts the session."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.e2e.browser import (
    ARTIFACTS,
    act_until,
    another_browser,
    assert_no_exception,
    never_within,
    progress_text,
    run_on_screen,
    start_a_run,
    stored_status,
    streamlit_server,
    wait_for_address,
    wait_until_shown,
)
from tests.run_helpers import wait_for


def _box(page: Page, selector: str, text: str) -> dict[str, float]:
    """Where an element is drawn (read until it is: the live view redraws every second)."""
    element = page.locator(selector, has_text=text).first

    def drawn() -> dict[str, float] | None:
        element.wait_for()
        return element.bounding_box()

    return wait_for(drawn, 5, what=f"{selector} with {text!r} is not drawn", every=0.25)


def test_the_first_screen_at_1280x720_holds_the_controls_and_the_reward_curve(
    page: Page, server: str
) -> None:
    tab = another_browser(page, 1280, 720)
    start_a_run(tab, server)
    tab.locator(".gtitle:visible", has_text="Episode return").first.wait_for()
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


def _drawn(read: Callable[[], list[float]]) -> list[float]:
    """`read()` once every value is there: the live page redraws its charts every second, and a
    read in the middle of a redraw finds none (or a 0 for an element being replaced)."""
    seen: list[list[float]] = [[]]

    def all_there() -> list[float] | None:
        seen[0] = read()
        return seen[0] if seen[0] and all(seen[0]) else None

    return wait_for(
        all_there, 10, what=lambda: f"the page never showed them all: {seen[0]}", every=0.25
    )


def _tick_font_sizes(page: Page) -> list[float]:
    return _drawn(
        lambda: page.evaluate(
            """() => [...document.querySelectorAll('.xtick text, .ytick text')]
                     .map(t => parseFloat(getComputedStyle(t).fontSize))"""
        )
    )


def _main_font_sizes(page: Page) -> dict[str, float]:
    """The computed font size (px) of the first of each kind of text in the main area."""
    names = ("metric label", "metric value", "widget label", "markdown")
    sizes = _drawn(lambda: [_main_font_size_table(page)[name] for name in names])
    return dict(zip(names, sizes, strict=True))


def _main_font_size_table(page: Page) -> dict[str, float]:
    return page.evaluate(
        """() => Object.fromEntries(Object.entries({
                 'metric label': '[data-testid="stMetricLabel"] p',
                 'metric value': '[data-testid="stMetricValue"] p',
                 'widget label': '[data-testid="stWidgetLabel"] p',
                 'markdown': '[data-testid="stMarkdownContainer"] p',
               }).map(([name, sel]) => {
                 const e = document.querySelector('.stMain ' + sel);
                 return [name, e ? parseFloat(getComputedStyle(e).fontSize) : 0];
               }))"""
    )


def test_projector_mode_from_the_url_lasts_across_pages(page: Page, server: str) -> None:
    tab = another_browser(page, 1280, 720)
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
    tab.locator('.stMain [data-testid="stMetricLabel"]').first.wait_for()
    text = _main_font_sizes(tab)  # the page's own text grows too, not only the charts'
    assert text["metric label"] >= 18 and text["widget label"] >= 18, text
    assert text["metric value"] >= 40 and text["markdown"] >= 19, text
    # Two rows of counters: at 1280 px a seventh of the row cut "30,000" to "30,…".
    tab.wait_for_function(
        r"""() => [...document.querySelectorAll('.stMain [data-testid="stMetricValue"]')]
                  .some(v => /\d\d,\d{3}/.test(v.innerText))"""
    )
    cut = tab.evaluate(
        """() => [...document.querySelectorAll('.stMain [data-testid="stMetricValue"] *,'
                   + '.stMain [data-testid="stMetricLabel"] *')]
                 .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)"""
    )
    assert not cut, f"counters cut off in projector mode at 1280x720: {cut}"
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
    tab = another_browser(page)
    tab.goto(f"{server}/live?lesson=alpha")
    tab.get_by_text("Lesson: How strongly to prioritize").wait_for()
    assert not tab.locator('[data-testid="stSlider"]', has_text="IS correction").count()
    tab.get_by_role("link", name="Sum tree").first.click()
    tab.get_by_role("button", name="Draw a batch").first.wait_for()
    tab.get_by_role("link", name="Live training").first.click()
    tab.get_by_text("Lesson: How strongly to prioritize").wait_for()
    wait_for_address(tab, has=("lesson=alpha",))
    assert not tab.locator('[data-testid="stSlider"]', has_text="IS correction").count()
    tab.get_by_role("button", name="Leave the lesson").click()
    tab.locator('[data-testid="stSlider"]', has_text="IS correction").wait_for()
    wait_for_address(tab, lacks=("lesson=",))
    assert_no_exception(tab)
    tab.context.close()


def test_a_full_server_queues_a_student_shows_the_wait_and_starts_by_itself(
    page: Page, tmp_path: Path
) -> None:
    """One training slot: the teacher's run takes it; a student who forks the class's setup
    waits in the queue (place, estimate, a way back to the teacher) and starts by itself when
    the teacher pauses (a paused run holds memory, not the slot); the teacher's Resume then
    waits for the slot in turn."""
    with streamlit_server(tmp_path, "server-full.log", RDQN_MAX_RUNS="1") as (url, _):
        teacher = another_browser(page, timeout_s=120)
        start_a_run(teacher, url)
        teacher.locator('[data-testid="stProgress"]', has_text="left").first.wait_for()
        code = _class_code(teacher)

        student = another_browser(page, timeout_s=120)
        student.goto(f"{url}/live?follow={code}")
        # The click leaves the read-only view (its callback drops ?follow=) ...
        act_until(
            student,
            student.get_by_role("button", name="Try this setup myself").click,
            "() => !location.search.includes('follow=')",
            "Try this setup myself",
        )
        # ... and the new run waits: place 1 of 1 once the teacher's earlier runs have ended (a
        # run being stopped holds its slot until it does, so a restart just before may
        # briefly queue ahead).
        queued = student.locator('[data-testid="stAlert"]', has_text="place 1 of 1")
        wait_until_shown(student, queued)
        assert "waits in the queue" in queued.inner_text()
        estimate = r"\((under|about) [^)]*, sooner if a run is stopped\)"
        assert re.search(estimate, queued.inner_text()), queued.inner_text()
        watch = student.get_by_role("button", name="Watch the teacher instead")
        watch.wait_for()
        student.screenshot(path=str(ARTIFACTS / "queued-student.png"))
        # A student who came without the class link is offered the class on show too, and
        # place 2 gets an estimate as well (the teacher's time left, then the run ahead's).
        latecomer = another_browser(page, timeout_s=120)
        latecomer.goto(f"{url}/live?steps=1000000")
        latecomer.get_by_role("button", name="Start", exact=True).click()
        second = latecomer.locator('[data-testid="stAlert"]', has_text="place 2 of 2")
        wait_until_shown(latecomer, second)
        latecomer.get_by_role("button", name="Watch the teacher instead").wait_for()
        latecomer.wait_for_function(
            f"""() => [...document.querySelectorAll('[data-testid="stAlert"]')]
                     .some(a => a.innerText.includes('place 2 of 2')
                                && /{estimate}/.test(a.innerText))"""
        )
        # The queued student keeps the way back to the class while waiting (it once vanished
        # within seconds): 8 s of page refreshes later, still there.
        wait_until_shown(student, student.get_by_text("place 1 of 2"))  # its next refresh
        assert watch.count() == 1
        never_within(
            student,
            8,
            """() => [...document.querySelectorAll('button')]
                       .every(a => !a.innerText.includes('Watch the teacher instead'))
                     || ![...document.querySelectorAll('[data-testid="stAlert"]')]
                       .some(a => a.innerText.includes('waits in the queue')
                                  && a.innerText.includes('place 1 of'))""",
            "the 'Watch the teacher instead' button or the place in the queue went away",
        )
        # Watching the teacher instead gives up the latecomer's place, once asked: its run
        # leaves the queue (stopped, it can start later) and the page follows the class.
        latecomer_run = re.search(r"run (\w{12}) waits", second.inner_text()).group(1)
        latecomer.get_by_role("button", name="Watch the teacher instead").click()
        latecomer.get_by_role("button", name="Give up my place and watch").click()
        latecomer.wait_for_url(re.compile(f"follow={code}"))
        latecomer.get_by_text(f"Following class {code}").wait_for()
        wait_for(lambda: stored_status(tmp_path, latecomer_run) == "stopped", 30)
        wait_until_shown(student, student.get_by_text("place 1 of 1"))  # the queue moved up
        assert_no_exception(latecomer)
        latecomer.context.close()

        teacher.get_by_role("button", name="Pause").click()
        student.locator('[data-testid="stProgress"]', has_text="running").first.wait_for()
        student.get_by_role("button", name="Pause").wait_for()
        assert student.get_by_role("button", name="Pause").is_enabled()  # the buttons follow
        teacher.get_by_role("button", name="Resume").click()
        teacher.get_by_text("Every training slot is taken: the run goes on when one").wait_for()
        student.get_by_role("button", name="Pause").click()
        teacher.locator('[data-testid="stProgress"]', has_text="running").first.wait_for()
        assert_no_exception(student)
        assert_no_exception(teacher)
        teacher.get_by_role("button", name="Pause").click()
        for tab in (teacher, student):
            tab.context.close()


def _wait_for_run(tab: Page, shown_is_right: Callable[[str], bool], timeout: float = 60.0) -> None:
    """Until the run on the live page satisfies ``shown_is_right(run_id)``."""
    wait_for(
        lambda: shown_is_right(run_on_screen(tab)),
        timeout,
        what=lambda: f"the page still shows {progress_text(tab)} at {tab.url}",
        every=0.25,
    )


def _class_code(teacher: Page) -> str:
    teacher.get_by_role("button", name="Share with the class").click()
    link = teacher.locator('[data-testid="stPopoverBody"] [data-testid="stCode"]').first
    code = re.search(r"follow=([A-Z0-9]{4})", link.inner_text())
    assert code, link.inner_text()
    teacher.keyboard.press("Escape")
    return code.group(1)


def test_a_guided_lesson_from_start_to_end(page: Page, server: str) -> None:
    """The teacher opens a lesson link, starts step 1, and goes through every step with Next
    (each step's chart outlined, its controls only), back once, and leaves the lesson."""
    tab = another_browser(page, 1600, 1000)
    tab.goto(f"{server}/live?lesson=why-prioritize")
    panel = tab.locator(".st-key-live_lesson")
    panel.get_by_text("step 1 of 5").wait_for()
    assert tab.get_by_role("button", name="Back").is_disabled()
    tab.get_by_role("button", name="Start", exact=True).click()
    tab.locator('[data-testid="stProgress"]', has_text="running").first.wait_for()
    # Step 1's run has learned: its |TD error| is the overlay of step 2's loss chart below.
    tab.locator(".st-key-live_area_loss .legend").first.wait_for()
    runs = [run_on_screen(tab)]
    for number in range(2, 6):
        act_until(  # a click can be lost to a rerun that redraws the button
            tab,
            tab.get_by_role("button", name="Next").click,
            f"""() => document.querySelector('.st-key-live_lesson')?.innerText
                         .includes('step {number} of 5')""",
            what=f"Next to step {number}",
        )
        # Steps 3 and 4 keep step 2's run, step 5 brings step 1's back; wait for the view to
        # show that run (it redraws once a second), then read it.
        if number == 2:
            _wait_for_run(tab, lambda shown: shown != runs[0])
        elif number in (3, 4):
            _wait_for_run(tab, lambda shown: shown == runs[1])
        else:
            _wait_for_run(tab, lambda shown: shown == runs[0])
        runs.append(run_on_screen(tab))
        if number == 2:  # the loss chart shows step 1's |TD error| beside this run's
            loss_legend = tab.locator(".st-key-live_area_loss .legendtext")
            loss_legend.filter(has_text="previous: uniform").first.wait_for()
        # Exactly one area outlined; wait for it, since a step that brings another run back
        # redraws its areas (one CI run read 0 in between).
        count_outlined = """() => [...document.querySelectorAll('[class*="st-key-live_area_"]')]
                     .filter(el => getComputedStyle(el).outlineStyle === 'solid').length"""
        try:
            tab.wait_for_function(f"() => ({count_outlined})() === 1", timeout=15_000)
        except PlaywrightTimeout:
            outlined = tab.evaluate(count_outlined)
            raise AssertionError(f"step {number}: {outlined} areas outlined") from None
        if number == 3:
            tab.screenshot(path=str(ARTIFACTS / "guided-lesson.png"))
        assert_no_exception(tab)
    assert runs[1] != runs[0] and runs[2] == runs[1]  # step 3 keeps step 2's run
    assert runs[4] == runs[0]  # step 5 brings step 1's run back
    assert tab.get_by_role("button", name="Next").is_disabled()
    tab.get_by_role("button", name="Back").click()
    panel.get_by_text("step 4 of 5").wait_for()
    # Step 4 speaks of step 2's prioritized run, with the uniform one dashed: Back brings it
    # back (it showed step 5's uniform run, the prioritized one dashed).
    _wait_for_run(tab, lambda shown: shown == runs[1])
    reward_legend = tab.locator(".st-key-live_area_reward .legendtext")
    reward_legend.filter(has_text="previous: uniform").first.wait_for()
    act_until(  # Back redraws the page as the run comes back: a click can be lost to it
        tab,
        tab.get_by_role("button", name="Leave the lesson").click,
        "() => document.querySelector('.st-key-live_lesson') === null",
        what="Leave the lesson",
    )
    wait_for_address(tab, lacks=("lesson=",))
    pause = tab.get_by_role("button", name="Pause").first
    if pause.is_enabled():
        pause.click()
    tab.context.close()
