"""A fresh server's first page: the teacher who has just started the dashboard sees its own
navigation and what the wait is for, not a blank page under a list of file names."""

from __future__ import annotations

from playwright.sync_api import Page

from rdqn.dashboard.chart_code import CONTAINER_KEY, DRAW_AFTER_S
from tests.e2e.browser import another_browser, assert_no_exception, never_within

_STATE = """() => ({
    links: [...document.querySelectorAll('[data-testid=stSidebarNav] a')].map(a => a.innerText),
    spinner: document.body.innerText.includes('Starting the dashboard'),
    page: !!document.querySelector('h1') &&
          document.querySelector('h1').innerText.includes('Prioritized experience replay'),
})"""


def _lists(state: dict, title: str) -> bool:
    """Whether the sidebar's navigation has a link titled `title` (a link's text is its icon's
    name, then its title)."""
    return any(link.split("\n")[-1].strip() == title for link in state["links"])


def test_the_first_page_of_a_fresh_server_shows_the_navigation_before_the_page(
    page: Page, server: str
) -> None:
    """The module's server has served no page yet: its first page run imports the dashboard
    (pandas, Plotly, the pages' modules). The navigation, with the pages' titles, comes before
    the home page; while the import lasts long enough for Streamlit to draw the spinner (it waits
    a moment before it does, and a quiet machine may not need one), the spinner says what the
    wait is for, under that navigation."""
    tab = another_browser(page, 1400, 900)
    tab.goto(server)
    # Every state the page passes through, recorded by the page at each check (ten a second).
    record = f"""() => {{ const state = ({_STATE})(); (window.__seen ||= []).push(state);
                         return state; }}"""
    tab.wait_for_function(f"() => ({record})().page", polling=100, timeout=120_000)
    seen = tab.evaluate("() => window.__seen")
    first_page = next(i for i, s in enumerate(seen) if s["page"])
    assert any(_lists(s, "Live training") for s in seen[: first_page + 1]), seen[:5]
    waiting = [s for s in seen if s["spinner"]]
    assert all(_lists(s, "Live training") for s in waiting), waiting[0]["links"]
    assert _lists(seen[-1], "Saved runs") and not _lists(seen[-1], "app")
    assert_no_exception(tab)
    tab.context.close()


_COUNT_MESSAGES = """() => {
    const Native = window.WebSocket;
    window.__messages = 0;
    window.WebSocket = function (...args) {
        const socket = new Native(...args);
        socket.addEventListener('message', () => { window.__messages += 1; });
        return socket;
    };
    window.WebSocket.prototype = Native.prototype;
    Object.assign(window.WebSocket, Native);
}"""
_CHART_CODE_FETCHED = """() => performance.getEntriesByType('resource')
    .some(entry => entry.name.includes('PlotlyChart'))"""


def test_a_new_browser_loads_the_chart_code_while_home_is_read_and_home_then_rests(
    page: Page, server: str
) -> None:
    """Home draws no chart, yet a browser that opened it has Plotly's code by the time the
    teacher clicks *Start demo* (`rdqn.dashboard.chart_code`): loaded after Home showed, by a chart
    nobody sees. Then the page's timer ends: no message reaches the idle page any more."""
    tab = another_browser(page, 1280, 800)
    tab.add_init_script(f"({_COUNT_MESSAGES})()")
    tab.goto(server)
    tab.get_by_role("button", name="Start demo").wait_for()
    tab.wait_for_function(_CHART_CODE_FETCHED, polling=100)
    tab.wait_for_function(f"() => !document.querySelector('.st-key-{CONTAINER_KEY}')")
    assert tab.get_by_role("button", name="Start demo").is_visible()
    assert_no_exception(tab)
    received = tab.evaluate("() => window.__messages")
    assert received > 0  # the counter counts the page's messages
    never_within(
        tab,
        4 * DRAW_AFTER_S,
        f"() => window.__messages > {received}",
        "Home kept running after the chart code loaded",
    )
    tab.context.close()
