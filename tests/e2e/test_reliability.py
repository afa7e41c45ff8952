"""Two students on one server, in a real browser: one's run is the other's to watch, never to
delete, and text from a URL is shown as text.

AppTest sees the Markdown a page sends; only a browser shows what it renders: no link, no
image, no request to the payload's hosts.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode, urlsplit

from playwright.sync_api import Page

from tests.e2e.browser import ARTIFACTS, act_until, another_browser, assert_no_exception

RUN_ID = re.compile(r"\b[0-9a-f]{12}\b")
PAYLOAD = (
    "[Click here to log in](https://evil.example/login) ![t](http://host.example/x.png) "
    '<img src="http://host.example/y.png"> www.evil.example'
)


def test_another_student_watches_cannot_delete_and_sees_url_text_as_text(
    page: Page, server: str
) -> None:
    owner = another_browser(page, 1400, 1000)
    owner.goto(f"{server}/live?steps=1000000")
    owner.get_by_role("button", name="Start", exact=True).click()
    # The run is filed at once; no need to wait for it to train.
    found = owner.get_by_text(RUN_ID).first
    found.wait_for()
    run_id = RUN_ID.search(found.inner_text()).group(0)  # type: ignore[union-attr]

    other = another_browser(page, 1400, 1000)
    fetched: list[str] = []
    other.on("request", lambda request: fetched.append(request.url))
    query = urlencode({"run": run_id, "preset": PAYLOAD, "alpha": PAYLOAD})
    other.goto(f"{server}/live?{query}")
    note = other.locator('[data-testid="stAlert"]', has_text="URL note").first
    note.wait_for()
    shown = note.inner_text().replace("\u200b", "")  # the invisible space that breaks autolinks
    assert "[Click here to log in](https://evil.example/login)" in shown
    other.get_by_text("only the session that started it controls it").wait_for()
    assert other.locator("a[href*='evil.example'], img[src*='host.example']").count() == 0
    hosts = {urlsplit(url).hostname for url in fetched}
    assert not hosts & {"host.example", "evil.example", "www.evil.example"}, hosts
    assert other.get_by_role("button", name="Pause").count() == 0  # read-only

    other.goto(f"{server}/runs")
    grid = other.locator('[data-testid="stDataFrame"]').first
    other.wait_for_function(  # the grid has drawn the run's row (the only one)
        """run => [...document.querySelectorAll('[data-testid="stDataFrame"] [role="gridcell"]')]
                 .some(cell => cell.innerText.includes(run))""",
        arg=run_id[:6],
    )
    other.get_by_text("Select runs to overlay their curves").wait_for()
    act_until(
        other,
        # The first row's box, located when clicked.
        lambda: grid.click(position={"x": 12, "y": 52}),
        """() => [...document.querySelectorAll('[data-testid="stExpander"]')]
                 .some(e => e.innerText.includes('Delete this run'))""",
        what="selecting the run's row",
    )
    other.get_by_text("Delete this run").click()
    other.get_by_text("Another session started this run").wait_for()
    assert other.get_by_role("checkbox", name="I am sure").is_disabled()
    assert_no_exception(other)
    other.screenshot(path=str(ARTIFACTS / "reliability-other-student.png"))

    assert owner.get_by_text("The run stopped").count() == 0
    owner.context.close()
    other.context.close()
