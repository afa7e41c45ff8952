"""Browser-test fixtures: one server and one Chromium tab per test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from tests.e2e.browser import ARTIFACTS, PAGE_ERRORS, streamlit_server, watched
from tests.harness.chromium import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def server_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's server's RDQN_HOME: its run store, for a test to read what it recorded."""
    return tmp_path_factory.mktemp("rdqn-home")


def _server_log(item: pytest.Item) -> Path:
    return ARTIFACTS / f"server-{item.module.__name__.rsplit('.', 1)[-1]}.log"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    """A failed test that used this module's server reports the tail of its log too: what the
    server saw while the page did not show what the test waited for."""
    report = yield
    log = _server_log(item)
    if report.failed and call.when == "call" and "server" in item.fixturenames and log.exists():
        report.sections.append(("server log", log.read_text(errors="replace")[-4000:]))
    return report


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, server_home: Path) -> Iterator[str]:
    with streamlit_server(server_home, _server_log(request.node).name) as (url, _):
        yield url


@pytest.fixture(scope="module")
def page(server: str) -> Iterator[Page]:
    assert Path(CHROMIUM).exists(), (
        f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium); "
        "the browser tests must run, not skip"
    )
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tab = watched(browser.new_context(viewport={"width": 1400, "height": 1000})).new_page()
        tab.set_default_timeout(60_000)
        yield tab
        browser.close()


@pytest.fixture(autouse=True)
def no_page_error() -> Iterator[None]:
    """A test fails if one of its pages threw an uncaught JavaScript error (`PAGE_ERRORS`)."""
    PAGE_ERRORS.clear()
    yield
    assert not PAGE_ERRORS, "uncaught errors in the page:\n" + "\n".join(PAGE_ERRORS)
