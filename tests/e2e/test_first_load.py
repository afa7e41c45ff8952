"""A fresh server's first page: the teacher who has just started the dashboard sees its own
navigation and what the wait is for, not a blank page under a list of file names."""

from __future__ import annotations

from playwright.sync_api import Page

from tests.e2e.browser import ARTIFACTS, another_browser, assert_no_exception

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


def test_the_first_page_of_a_fresh_server_shows_the_navigation_and_a_spinner_first(
    page: Page, server: str
) -> None:
    """The module's server has served no page yet: its first page run imports the dashboard
    (PyTorch, SciPy, the replay kernels; seconds). The navigation, with the pages' titles, and
    a spinner come before that; the home page follows."""
    tab = another_browser(page, 1400, 900)
    tab.goto(server)
    # Every state the page passes through, recorded by the page at each check (ten a second).
    record = f"""() => {{ const state = ({_STATE})(); (window.__seen ||= []).push(state);
                         return state; }}"""
    first = tab.wait_for_function(
        f"() => {{ const state = ({record})(); return state.spinner || state.page; }}",
        polling=100,
        timeout=120_000,
    )
    if not tab.evaluate(_STATE)["page"]:
        tab.screenshot(path=str(ARTIFACTS / "first-load.png"))  # the spinner
    first.dispose()
    tab.wait_for_function(f"() => ({record})().page", polling=100, timeout=120_000)
    seen = tab.evaluate("() => window.__seen")
    waiting = [s for s in seen if s["spinner"]]
    assert waiting, f"no spinner before the home page; states seen: {seen[:5]} ... {seen[-3:]}"
    assert all(_lists(s, "Live training") for s in waiting), waiting[0]["links"]
    assert _lists(seen[-1], "Saved runs") and not _lists(seen[-1], "app")
    assert_no_exception(tab)
    tab.context.close()
