"""Reading the live page from the outside: the run its status line names.

The status line is the page's first progress bar: "running · run `<id>` (<settings>) · 3,855 of
100,000 steps · …"; in the browser the id's backticks are code formatting, not text.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page

RUN_ID = re.compile(r"run ([0-9a-f]{12})")
"""A run id as the status line shows it (12 hexadecimal digits)."""


def status_line(page: Page) -> str:
    """The live page's status line: state, run id, steps, time left (waits until it shows)."""
    return page.locator('[data-testid="stProgress"]').first.inner_text()


def run_on_screen(page: Page) -> str:
    """The id of the run the live page shows; `ValueError` saying what the line shows if none."""
    line = status_line(page)
    if (found := RUN_ID.search(line)) is None:
        raise ValueError(f"the live page's status line names no run: {line!r}")
    return found.group(1)
