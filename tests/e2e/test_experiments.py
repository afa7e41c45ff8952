"""The Experiments page: each study's tab draws its figures and its generated table from the
repository's results files, in Chromium, with no error on the page or in the server's log."""

from __future__ import annotations

from playwright.sync_api import Page

from tests.e2e.browser import ARTIFACTS, another_browser, assert_no_exception, wait_until_shown


def test_every_study_s_tab_draws_its_curves_and_table(server: str, page: Page) -> None:
    tab = another_browser(page, 1400, 1000)
    tab.goto(f"{server}/experiments")
    wait_until_shown(tab, tab.get_by_role("heading", name="The PER paper's figure 1"))
    for name, title, row in (
        ("MinAtar", "MinAtar Breakout: greedy return", "Breakout"),
        ("Recurrent replay", "Masked CartPole: greedy return", "stored-state"),
    ):
        tab.get_by_role("tab", name=name).click()
        wait_until_shown(tab, tab.get_by_text(title).first)
        panel = tab.get_by_role("tabpanel", name=name)
        wait_until_shown(tab, panel.get_by_role("cell", name=row, exact=True).first)
        assert_no_exception(tab)
        tab.screenshot(path=str(ARTIFACTS / f"experiments-{name.split()[0].lower()}.png"))
    tab.context.close()
