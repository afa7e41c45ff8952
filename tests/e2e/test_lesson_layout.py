"""The live page's charts never go blank between their redraws (issue 25), in a browser.

The server's log holds no traceback (`streamlit_server` asserts it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.e2e.browser import (
    another_browser,
    run_on_screen,
    saying_what_the_page_shows,
    streamlit_server,
)

WIDTH, HEIGHT = 1280, 720


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rdqn-home")


@pytest.fixture(scope="module")
def served(home: Path) -> Iterator[str]:
    with streamlit_server(home, "server-lesson-layout.log") as (url, _):
        yield url


# Counts, once per animation frame (what a person sees), the frames in which a live chart's
# area has no drawn chart: none there, or no drawn Plotly SVG.
COUNT_BLANK_FRAMES = """() => {
  const seen = window.blankFrames = {frames: 0, blank: 0, first: [], start: performance.now()};
  const blank = () => ['reward', 'loss'].filter(name => {
    const area = document.querySelector('.st-key-live_area_' + name);
    return !area || ![...area.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg')]
      .some(svg => { const b = svg.getBoundingClientRect(); return b.width > 0 && b.height > 0; });
  });
  const frame = () => {
    seen.frames += 1;
    const missing = blank();
    if (missing.length) {
      seen.blank += 1;
      if (seen.first.length < 5) seen.first.push([performance.now() - seen.start, missing]);
    }
    if (!seen.stop) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}"""


def test_the_charts_never_go_blank_between_redraws(page: Page, served: str) -> None:
    """About 10 s of a training run's page, Reset (a new run, with no data for a moment)
    halfway. Before: a chart went blank about once a second (Streamlit mounted every redrawn
    chart anew) and both charts vanished for a second after the Reset."""
    tab = another_browser(page, WIDTH, HEIGHT, timeout_s=120)
    tab.goto(f"{served}/live?steps=1000000")
    tab.get_by_role("button", name="Start", exact=True).click()
    with saying_what_the_page_shows(tab):
        tab.locator(".st-key-live_area_reward .legend").first.wait_for()
        tab.locator(".st-key-live_area_loss .legend").first.wait_for()
    first_run = run_on_screen(tab)
    tab.evaluate(COUNT_BLANK_FRAMES)
    elapsed = "ms => performance.now() - window.blankFrames.start > ms"
    tab.wait_for_function(elapsed, arg=5_000, polling=250)
    tab.get_by_role("button", name="Reset", exact=True).click()
    with saying_what_the_page_shows(tab):
        tab.wait_for_function(
            """run => [...document.querySelectorAll('[data-testid="stProgress"]')]
                     .some(p => /run [0-9a-f]{12}/.test(p.innerText)
                                && !p.innerText.includes(run))""",
            arg=first_run,
        )
    tab.wait_for_function(elapsed, arg=10_000, polling=250)
    seen = tab.evaluate("() => { window.blankFrames.stop = true; return window.blankFrames; }")
    assert seen["frames"] >= 50, seen  # the page was drawn throughout
    assert seen["blank"] == 0, f"{seen['blank']} of {seen['frames']} frames lacked a chart: {seen}"
    tab.get_by_role("button", name="Pause").click()
    tab.context.close()
