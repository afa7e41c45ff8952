"""End-to-end: Home's *Start demo* solves CartPole on the live page, in a real browser.

The `demo` preset stops once the mean return of 20 episodes reaches 475. The live page must show
it: the counter of the last 20 returns at 475 or more, and the run finished; and so again after
the projector's tab reloads. Headless it takes
about ten seconds (benchmarks/bench_demo.py); the timeout is generous for a loaded machine, where
the dashboard's runs train at a lower priority than everything else.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page

from rdqn.config import RETURN_WINDOW
from rdqn.presets import preset
from tests.e2e.browser import ARTIFACTS, assert_no_exception, run_on_screen, wait_for_metric

SOLVE_TIMEOUT_MS = 240_000


def test_start_demo_shows_the_run_reaching_475(server: str, page: Page) -> None:
    goal = preset("demo").train.stop_at_return
    assert goal == 475
    page.goto(server)
    page.get_by_role("button", name="Start demo").click()
    page.wait_for_url(re.compile(r".*/live.*"))
    page.set_default_timeout(SOLVE_TIMEOUT_MS)
    wait_for_metric(page, f"Return (last {RETURN_WINDOW})", f"v >= {goal:g}")
    page.locator('[data-testid="stProgress"]', has_text="finished").first.wait_for()
    said = page.locator('[data-testid="stProgress"]').first.inner_text()
    assert f"finished: it reached its goal, a mean return of {goal:g} over 20 episodes" in said
    assert_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "demo-solved.png"), full_page=True)
    solved = run_on_screen(page)
    page.reload()
    page.locator('[data-testid="stProgress"]', has_text="finished").first.wait_for()
    assert run_on_screen(page) == solved
    wait_for_metric(page, f"Return (last {RETURN_WINDOW})", f"v >= {goal:g}")
    assert_no_exception(page)
