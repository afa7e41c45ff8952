"""A reload keeps a student's run (nothing lost): the browser's owner cookie makes the
reloaded page the same owner, so the run goes on and is back on screen; another browser is
never offered it."""

from __future__ import annotations

import time
from pathlib import Path

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page

from rdqn.runs.store import RunStore
from tests.e2e.browser import (
    another_browser,
    assert_no_exception,
    never_within,
    progress_text,
    run_on_screen,
    start_a_run,
    steps_done,
    stored_status,
)
from tests.run_helpers import wait_for

AWAY_S = 60.0
"""How long a browser's tab stays closed, or its network away (the away window is 600 s)."""


def _page_drawn(tab: Page) -> None:
    """Until the live page is drawn to its end (its resume list, if any, comes before)."""
    tab.get_by_text("Curve smoothing (EMA)").wait_for()


def test_a_reload_keeps_the_run_and_another_browser_is_not_offered_it(
    page: Page, server: str, server_home: Path
) -> None:
    tab = another_browser(page)
    context = tab.context
    start_a_run(tab, server)
    run_id = run_on_screen(tab)
    cookie = {c["name"]: c for c in context.cookies()}.get("rdqn_owner")
    assert cookie is not None and len(cookie["value"]) == 24, context.cookies()
    assert cookie["value"] not in tab.url and cookie["sameSite"] == "Strict"

    tab.reload()
    tab.locator('[data-testid="stProgress"]', has_text="running").first.wait_for()
    assert run_on_screen(tab) == run_id
    never_within(  # longer than the grace (3 s on the test server) that must not end it
        tab,
        4.5,
        """run => ![...document.querySelectorAll('[data-testid="stProgress"]')]
                  .some(p => p.innerText.startsWith('running') && p.innerText.includes(run))""",
        "the reloaded page's run stopped within the grace period",
        arg=run_id,
    )
    assert progress_text(tab).startswith("running"), progress_text(tab)
    assert run_on_screen(tab) == run_id
    assert tab.get_by_role("button", name="Pause").is_enabled()
    assert_no_exception(tab)

    # At once, for a minute (twenty grace periods of the test server, six of the default): this
    # browser's last tab closes, and another browser's network goes away. The closed browser's
    # run pauses after the grace, keeping its place; neither run stops; both train again when
    # their browsers are back.
    offline = another_browser(page)
    start_a_run(offline, server)
    offline_run = run_on_screen(offline)
    tab.close()
    offline.context.set_offline(True)
    gone = time.monotonic()
    wait_for(lambda: stored_status(server_home, run_id) == "paused", 30, what="not paused")
    other = another_browser(page)  # meanwhile, another browser is not offered it
    other.goto(f"{server}/live")
    _page_drawn(other)
    assert other.get_by_text(f"Run {run_id} (").count() == 0
    assert_no_exception(other)
    other.context.close()
    wait_for(lambda: time.monotonic() - gone > AWAY_S, AWAY_S + 30, every=1.0)
    assert stored_status(server_home, run_id) == "paused"
    assert stored_status(server_home, offline_run) in ("running", "paused")
    offline.context.set_offline(False)
    again = context.new_page()
    again.set_default_timeout(60_000)
    again.goto(f"{server}/live")
    for shown, run in ((again, run_id), (offline, offline_run)):
        shown.locator('[data-testid="stProgress"]', has_text=f"running · run {run}").wait_for()
        wait_for(lambda run=run: stored_status(server_home, run) == "running", 30, what="paused")
        before = steps_done(shown)
        wait_for(
            lambda shown=shown, before=before: steps_done(shown) > before,
            30,
            what="the run does not train",
        )
        assert_no_exception(shown)
    offline.context.close()
    context.close()


def test_a_reload_storm_keeps_the_run(page: Page, server: str) -> None:
    """F5 held down: reloads faster than the page can connect run no page script, so
    for the whole storm no session of the browser is attached, for several times the grace
    period (3 s on the test server). The browser's page requests still reach the server with its
    cookie, so its run goes on and is back on screen, the same run, when the storm ends."""
    tab = another_browser(page)
    context = tab.context
    start_a_run(tab, server)
    run_id = run_on_screen(tab)

    reloads = 0
    started = time.monotonic()
    while time.monotonic() - started < 12.0:  # four graces long
        try:
            tab.reload(wait_until="commit")
            reloads += 1
        except PlaywrightError as error:
            # Chromium's own race: a reload that lands while the previous one swaps the page
            # finds no page attached. The next one goes on with the storm.
            if "Not attached to an active page" not in str(error):
                raise
        tab.wait_for_timeout(100)  # real time is the point: the storm's pace, 0.1 s apart
    assert reloads >= 20, f"only {reloads} reloads in the storm"

    tab.locator('[data-testid="stProgress"]', has_text="running").first.wait_for()
    assert run_on_screen(tab) == run_id, progress_text(tab)
    before = steps_done(tab)
    tab.wait_for_function(  # it trains on
        """(before) => {
            const s = document.querySelector('[data-testid="stProgress"]')?.innerText || '';
            const m = s.match(/([\\d,]+) of [\\d,]+ steps/);
            return s.startsWith('running') && m && Number(m[1].replace(/,/g, '')) > before;
        }""",
        arg=before,
    )
    assert_no_exception(tab)
    context.close()


def test_start_demo_after_a_reload_replaces_the_browsers_run(
    page: Page, server: str, server_home: Path
) -> None:
    """The teacher opens Home again (a new session of the same browser) while the browser's
    run trains, and presses Start demo: the demo replaces that run, as a restart would, and
    does not wait in the queue behind it or leave it training unseen."""
    tab = another_browser(page)
    start_a_run(tab, server)
    old = run_on_screen(tab)
    tab.goto(server)  # Home, in a new session
    tab.get_by_role("button", name="Start demo").click()
    tab.wait_for_function(
        """old => [...document.querySelectorAll('[data-testid="stProgress"]')]
                  .some(p => p.innerText.startsWith('running') && !p.innerText.includes(old))""",
        arg=old,
    )
    new = run_on_screen(tab)
    wait_for(lambda: stored_status(server_home, old) == "stopped", 30, what="the old run went on")
    with RunStore(server_home / "rdqn.db") as store:
        assert store.get_run(old).error.startswith(f"stopped: replaced by run {new}")
    tab.wait_for_function(  # its dashed overlay is the run it replaced
        """() => [...document.querySelectorAll('.legendtext')]
                 .some(t => t.textContent.startsWith('previous: '))"""
    )
    assert_no_exception(tab)
    tab.context.close()
