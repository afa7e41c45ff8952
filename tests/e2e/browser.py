"""Shared by the browser tests: a Streamlit server on a free local port, Debian's Chromium,
and readers of what the page shows."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, BrowserContext, Locator, Page
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from rdqn.runs.store import RunStore
from tests.harness.dashboard_server import start_dashboard
from tests.harness.live_page import run_on_screen as run_on_screen  # re-exported for the tests
from tests.harness.live_page import status_line as progress_text
from tests.run_helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"


PAGE_ERRORS: list[str] = []
"""Uncaught JavaScript errors of the tests' pages since the current test began (`watched`).
Streamlit's front end that throws while it applies an update leaves a white page that never
redraws: no element, no server traceback; the test that saw it fails saying so."""


def watched(context: BrowserContext) -> BrowserContext:
    """``context``, its pages' uncaught JavaScript errors recorded in `PAGE_ERRORS`."""
    context.on(
        "weberror",
        lambda error: PAGE_ERRORS.append(
            f"{error.page.url if error.page else '?'}: {error.error.message}"
        ),
    )
    return context


def new_context(browser: Browser, **options: object) -> BrowserContext:
    """A browser context of ``browser`` (another person's browser: its own cookies) whose
    pages' errors are `watched`."""
    return watched(browser.new_context(**options))  # type: ignore[arg-type]


def another_browser(
    page: Page, width: int | None = None, height: int | None = None, timeout_s: int = 60
) -> Page:
    """A tab in a browser context of its own, in `page`'s browser: another person's browser (its
    own cookies, so its own dashboard session), `width` x `height` if given, waiting up to
    `timeout_s` per step."""
    browser = page.context.browser
    assert browser is not None  # a tab of a launched browser
    if width and height:
        context = new_context(browser, viewport={"width": width, "height": height})
    else:
        context = new_context(browser)
    tab = context.new_page()
    tab.set_default_timeout(timeout_s * 1000)
    return tab


@contextlib.contextmanager
def streamlit_server(
    home: Path, log_name: str, **settings: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The dashboard's server on a free local port, its output in tests/artifacts/<log_name>.

    Once it has stopped, its log must hold no Python traceback: an error a page showed, or one
    only the server saw (a callback, a relay thread), fails the test that used the server."""
    # Several sessions train at once here: more than the default cap (the cores but one); a
    # closed tab's runs stop 3 s after it (not the default 10), so the flows wait less.
    env = {
        **os.environ,
        "RDQN_HOME": str(home),
        "RDQN_MAX_RUNS": "4",
        "RDQN_RELEASE_GRACE": "3",
        **settings,
    }
    ARTIFACTS.mkdir(exist_ok=True)
    process, url = start_dashboard(env, ARTIFACTS / log_name)
    try:
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=30)
    log = (ARTIFACTS / log_name).read_text(encoding="utf-8", errors="replace")
    assert "Traceback (most recent call last)" not in log, f"{log_name}:\n{log[-6000:]}"


def metric(page: Page, label: str) -> int:
    metric = page.locator('[data-testid="stMetric"]', has_text=label).first
    value = metric.locator('[data-testid="stMetricValue"]').inner_text()
    return int(value.replace(",", ""))


_LAST_EPISODE = """() => {
    const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
    const reward = charts.find(c => (c.querySelector('.gtitle')?.textContent || '')
                                      .includes('Episode return'));
    const plot = reward?.querySelector('.js-plotly-plot');
    const raw = (plot?._fullData || []).find(trace => trace.name === 'training return (explores)');
    return raw && raw.x.length ? raw.x[raw.x.length - 1] : 0;  // x grows
}"""


def last_episode_drawn(page: Page) -> float:
    """The env step of the last episode in the episode-return chart (0 while it has none),
    read from the data Plotly draws (`_fullData`, its traces after defaults)."""
    return page.evaluate(_LAST_EPISODE)


def wait_for_an_episode_after(page: Page, step: float) -> float:
    """Until the episode-return chart draws an episode that ended after env step ``step``;
    returns the step of its last one. (The chart is redrawn every second, and a reading taken
    while it is replaced reads no curve: the page is read until one reading shows it.)"""
    with saying_what_the_page_shows(page):
        drawn = page.wait_for_function(
            f"(step) => {{ const last = ({_LAST_EPISODE})(); return last > step && last; }}",
            arg=step,
        )
    return drawn.json_value()


GREEDY_POINTS = """() => {
    const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
    const reward = charts.find(c => (c.querySelector('.gtitle')?.textContent || '')
                                      .includes('Episode return'));
    const plot = reward?.querySelector('.js-plotly-plot');
    const greedy = (plot?._fullData || []).find(t => t.name === 'greedy return (watched)');
    return greedy ? greedy.x.length : 0;
}"""
"""The number of greedy returns on the page's reward chart (0: none drawn)."""


def wait_for_greedy_points(page: Page, more_than: int) -> int:
    """Until the reward chart draws more than ``more_than`` greedy returns; returns how many."""
    with saying_what_the_page_shows(page):
        return page.wait_for_function(
            f"(n) => {{ const k = ({GREEDY_POINTS})(); return k > n && k; }}", arg=more_than
        ).json_value()


def read_player(page: Page, script: str) -> Any:  # noqa: ANN401 - what ``script`` returns
    """``script`` evaluated in Watch it play's player (its episode is the global ``E``), or None
    while a newer episode replaces the player and it has no document."""
    try:
        player = page.locator(".st-key-live_area_watch iframe").first.element_handle()
        frame = player.content_frame()
        return None if frame is None else frame.evaluate(script)
    except PlaywrightError:
        return None


def shown_box(locator: Locator, what: str) -> dict:
    """Scroll ``locator`` into view and return its box. An element a fragment's refresh
    redraws can be replaced under the scroll ("not attached to the DOM"): look it up again."""

    def box() -> dict | None:
        try:
            locator.scroll_into_view_if_needed(timeout=5_000)
            return locator.bounding_box()
        except PlaywrightError:
            return None

    return wait_for(box, 60, what=what)


def wait_for_metric(page: Page, label: str, test: str) -> None:
    """Until the counter (``st.metric``) labelled ``label`` shows a number ``v`` for which the
    JavaScript expression ``test`` holds, e.g. ``"v > 1200"``."""
    with saying_what_the_page_shows(page):
        page.wait_for_function(
            f"""(label) => [...document.querySelectorAll('[data-testid="stMetric"]')]
                .filter(m => m.querySelector('[data-testid="stMetricLabel"]')?.innerText
                             .includes(label))
                .map(m => m.querySelector('[data-testid="stMetricValue"]')?.innerText || '')
                .filter(text => /\\d/.test(text))
                .some(text => {{ const v = Number(text.replace(/,/g, '')); return {test}; }})""",
            arg=label,
        )


def never_within(page: Page, seconds: float, happened: str, what: str, arg: object = None) -> None:
    """Watch the page for ``seconds`` (four times a second) and fail with ``what`` the moment
    the JavaScript predicate ``happened`` holds. For a thing that must not happen, where the
    length of the watch is the point (a run replaced, a button that vanished)."""
    try:
        page.wait_for_function(happened, arg=arg, polling=250, timeout=seconds * 1000)
    except PlaywrightTimeout:
        return
    raise AssertionError(f"{what}\n{what_the_page_shows(page)}")


def assert_no_exception(page: Page) -> None:
    errors = page.locator('[data-testid="stException"]')
    assert errors.count() == 0, errors.first.inner_text()


def stored_status(home: Path, run_id: str) -> str:
    """The run's status in the store of the server whose RDQN_HOME is ``home``."""
    with RunStore(home / "rdqn.db") as store:
        return store.get_run(run_id).status


def start_a_run(page: Page, url: str) -> None:
    """Open the live page with a long budget and start a run; return once it is running."""
    page.goto(f"{url}/live?steps=1000000")
    page.get_by_role("button", name="Start", exact=True).click()
    page.locator('[data-testid="stProgress"]', has_text="running").first.wait_for()


def steps_done(tab: Page) -> int:
    """Env steps done, from the live page's status line ("… · 12,345 of 100,000 steps …")."""
    done = re.search(r"([\d,]+) of [\d,]+ steps", progress_text(tab))
    assert done, progress_text(tab)
    return int(done.group(1).replace(",", ""))


def what_the_page_shows(page: Page) -> str:
    """The URL, title, status line, notices, captions, exceptions and sliders of a Streamlit
    page, and the pages' uncaught errors: for a failure message."""
    parts = [f"url: {page.url}"]
    parts += [f"page error: {error}" for error in PAGE_ERRORS]
    for name, selector in (
        ("title", "h1"),
        ("status", '[data-testid="stProgress"]'),
        ("notice", '[data-testid="stAlert"]'),
        ("caption", '[data-testid="stCaptionContainer"]'),
        ("exception", '[data-testid="stException"]'),
        ("slider", '[data-testid="stSlider"]'),
    ):
        with contextlib.suppress(Exception):
            parts += [f"{name}: {text}" for text in page.locator(selector).all_inner_texts()]
    return "\n".join(parts)


@contextlib.contextmanager
def saying_what_the_page_shows(page: Page) -> Iterator[None]:
    """A Playwright timeout inside becomes a failure that says what the page shows instead."""
    try:
        yield
    except PlaywrightTimeout as timeout:
        raise AssertionError(f"{timeout.message}\n{what_the_page_shows(page)}") from None


def wait_for_address(page: Page, *, has: tuple[str, ...] = (), lacks: tuple[str, ...] = ()) -> None:
    """Until the page's address holds every text of ``has`` and none of ``lacks``: Streamlit
    writes a page's query parameters into the address after it draws the page."""
    with saying_what_the_page_shows(page):
        page.wait_for_function(
            """([has, lacks]) => has.every(text => location.href.includes(text))
                                 && !lacks.some(text => location.href.includes(text))""",
            arg=[list(has), list(lacks)],
        )


def wait_until_shown(page: Page, locator: Locator) -> None:
    """Wait for ``locator`` (page's default timeout); fail saying what the page shows instead."""
    with saying_what_the_page_shows(page):
        locator.wait_for()


def act_until(
    page: Page, act: Callable[[], None], done: str, what: str, *, arg: object = None
) -> None:
    """``act()``, then wait until the JavaScript predicate ``done`` holds (given ``arg``); if it
    does not within 20 s, act once more, as a user whose click went unheard would, and say so in
    a warning.

    On a loaded machine an input can be lost to the page's first-load rerun, which redraws the
    widget it went to; the second try must succeed (page's default timeout)."""
    act()
    try:
        page.wait_for_function(done, arg=arg, timeout=20_000)
    except PlaywrightTimeout:
        shown = what_the_page_shows(page)
        warnings.warn(f"{what}: no effect after 20 s, done again\n{shown}", stacklevel=2)
        act()
        with saying_what_the_page_shows(page):
            page.wait_for_function(done, arg=arg)
