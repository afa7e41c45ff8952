"""The Sweeps page in a real browser, on a store that holds a sweep (filed by hand, its numbers
worked out in tests/dashboard/sweep_cases.py): the heatmap says each cell's mean and spread, a
click on a cell draws that cell's reward curves, and the page fits a 1280x720 projector."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from rdqn.runs.store import RunStore
from tests.dashboard.sweep_cases import hand_sweep
from tests.e2e.browser import (
    ARTIFACTS,
    another_browser,
    assert_no_exception,
    streamlit_server,
    wait_until_shown,
)

_TRACES = """(title) => {
    const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
    const chart = charts.find(c => (c.querySelector('.gtitle')?.textContent || '')
                                       .startsWith(title));
    const plot = chart?.querySelector('.js-plotly-plot');
    return plot ? (plot._fullData || []).map(trace => trace.name) : null;
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("rdqn-home")
    with RunStore(home / "rdqn.db") as store:
        sweep = hand_sweep(store)
    with streamlit_server(home, "server-test_sweeps.log") as (url, _):
        yield f"{url}/sweeps?sweep={sweep.id}"


def open_heatmap(tab: Page, url: str) -> None:
    tab.goto(url)
    wait_until_shown(tab, tab.get_by_text("Click a cell of the heatmap").first)
    assert_no_exception(tab)


def click_cell(tab: Page, column: float, row: float) -> None:
    """Click the heatmap's plot area at a fraction of its width (from the left) and height
    (from the bottom, where the first row is)."""
    area = tab.locator('[data-testid="stPlotlyChart"] .nsewdrag').first
    area.scroll_into_view_if_needed()
    box = area.bounding_box()
    assert box is not None
    tab.mouse.click(box["x"] + column * box["width"], box["y"] + (1 - row) * box["height"])


def test_a_click_on_a_heatmap_cell_draws_its_reward_curves(page: Page, server: str) -> None:
    open_heatmap(page, server)
    page.get_by_text("0.860 ± 0.156").first.wait_for()  # alpha 0, proportional: by hand
    page.get_by_text("0.100 ± 0.141").first.wait_for()  # alpha 0, rank
    assert page.evaluate(_TRACES, "Reward curves") is None  # no cell picked yet

    click_cell(page, 0.2, 0.15)  # column alpha 0, bottom row proportional, near its corner
    heading = page.locator("p", has_text="Reward curves of the cell").first
    wait_until_shown(page, heading)
    header = heading.inner_text()
    assert "replay.alpha = 0, replay.scheme = proportional" in header
    page.wait_for_function(f"() => ({_TRACES})('Reward curves') !== null")
    assert page.evaluate(_TRACES, "Reward curves") == ["seed 0", "seed 1", "mean of 2 seeds"]

    click_cell(page, 0.8, 0.8)  # alpha 1, rank: one run, stopped, with one episode
    page.wait_for_function(
        "() => [...document.querySelectorAll('p')].some(p => p.innerText.includes("
        "'replay.alpha = 1, replay.scheme = rank'))"
    )
    page.wait_for_function(
        f"() => JSON.stringify(({_TRACES})('Reward curves')) === "
        """JSON.stringify(['seed 0 (stopped)'])"""
    )
    assert_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "sweeps.png"))


def test_the_page_fits_a_projector(page: Page, server: str) -> None:
    tab = another_browser(page, 1280, 720)
    open_heatmap(tab, server)
    heat = tab.locator('[data-testid="stPlotlyChart"]').first
    heat.scroll_into_view_if_needed()
    box = heat.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1280
    assert tab.evaluate("() => document.documentElement.scrollWidth") <= 1280
    tab.get_by_text("0.860 ± 0.156").first.wait_for()
    tab.screenshot(path=str(ARTIFACTS / "sweeps-1280x720.png"))
    tab.context.close()
