"""A fresh server's first page: the teacher who has just started the dashboard sees its own
navigation and what the wait is for, not a blank page under a list of file names."""

from __future__ import annotations

from playwright.sync_api import Page

from tests.e2e.browser import another_browser, assert_no_exception

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
