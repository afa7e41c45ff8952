"""End-to-end: the real app in Debian's Chromium, driven by Playwright.

Starts `streamlit run app.py` on a free local port with its own RDQN_HOME, then acts as a user:
start the demo, watch the reward curve grow, move alpha and see the run restart, draw a batch on
the sum-tree page. Fails (never skips) when Chromium is missing, so CI cannot pass without it.
Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    # Several sessions train at once here: more than the default cap (the cores but one).
    env = {
        **os.environ,
        "RDQN_HOME": str(tmp_path_factory.mktemp("rdqn-home")),
        "RDQN_MAX_RUNS": "4",
    }
    ARTIFACTS.mkdir(exist_ok=True)
    log = (ARTIFACTS / "server.log").open("w", encoding="utf-8")  # read back on failure
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    output = (ARTIFACTS / "server.log").read_text(encoding="utf-8")
                    raise RuntimeError(f"streamlit did not start:\n{output}") from None
                time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()


@pytest.fixture(scope="module")
def page(server: str) -> Iterator[Page]:
    assert Path(CHROMIUM).exists(), (
        f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium); "
        "the browser tests must run, not skip"
    )
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        tab.set_default_timeout(60_000)
        yield tab
        browser.close()


def _metric(page: Page, label: str) -> int:
    metric = page.locator('[data-testid="stMetric"]', has_text=label).first
    value = metric.locator('[data-testid="stMetricValue"]').inner_text()
    return int(value.replace(",", ""))


def _run_id(page: Page) -> str:
    text = page.locator('[data-testid="stProgress"]').first.inner_text()
    match = re.search(r"run ([0-9a-f]{12})", text)
    assert match, text
    return match.group(1)


def _reward_points(page: Page) -> int:
    """Markers drawn in the episode-return chart (one per finished episode)."""
    return page.evaluate(
        """() => {
            const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
            const reward = charts.find(c => (c.querySelector('.gtitle')?.textContent || '')
                                              .includes('Episode return'));
            return reward ? reward.querySelectorAll('.scatterlayer .point').length : 0;
        }"""
    )


def _assert_no_exception(page: Page) -> None:
    errors = page.locator('[data-testid="stException"]')
    assert errors.count() == 0, errors.first.inner_text()


def test_demo_trains_alpha_restarts_and_sum_tree_draws(server: str, page: Page) -> None:
    page.goto(server)
    page.get_by_role("button", name="Start demo").click()
    page.wait_for_url(re.compile(r".*/live.*"))
    page.locator('[data-testid="stMetric"]', has_text="Env steps").first.wait_for()
    first_steps = _metric(page, "Env steps")
    deadline = time.monotonic() + 60
    while _reward_points(page) < 3:
        assert time.monotonic() < deadline, "no reward curve appeared"
        time.sleep(0.5)
    first_points = _reward_points(page)
    time.sleep(6)
    assert _metric(page, "Env steps") > first_steps
    assert _reward_points(page) > first_points, "the reward curve did not grow"
    _assert_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "live.png"), full_page=True)

    run_before = _run_id(page)
    alpha = page.locator('[data-testid="stSlider"]', has_text="prioritization")
    thumb = alpha.get_by_role("slider")
    thumb.focus()
    for _ in range(3):
        thumb.press("ArrowRight")
    page.wait_for_function(
        f"""() => [...document.querySelectorAll('[data-testid="stProgress"]')]
                 .some(el => el.innerText.includes('run ')
                             && !el.innerText.includes('{run_before}'))"""
    )
    assert _run_id(page) != run_before
    page.wait_for_url(re.compile(r".*alpha=0\.(7|75|8|85|9)\b.*"))
    _assert_no_exception(page)

    page.get_by_role("link", name="Sum tree").first.click()
    page.get_by_role("button", name="Draw a batch").first.click()
    time.sleep(2)
    _assert_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "sum_tree.png"), full_page=True)


def test_settings_form_and_shared_url_reproduce_the_setup_in_another_session(
    server: str, page: Page
) -> None:
    """A teacher sets up a run (URL and form), a student opens the copied address in a browser
    session of their own and sees the same setup."""
    browser = page.context.browser
    assert browser is not None
    teacher = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    teacher.set_default_timeout(60_000)
    teacher.goto(f"{server}/live?preset=paper&alpha=0.8")
    sidebar = teacher.locator('[data-testid="stSidebar"]')
    capacity = sidebar.get_by_role("spinbutton", name="Capacity")
    capacity.fill("2000")
    sidebar.get_by_role("button", name="Apply and restart").click()
    teacher.wait_for_url(re.compile(r".*capacity=2000.*"))
    teacher.locator('[data-testid="stProgress"]').first.wait_for()
    assert "alpha=0.8" in teacher.url and "preset=paper" in teacher.url
    _assert_no_exception(teacher)
    teacher.screenshot(path=str(ARTIFACTS / "live-settings-teacher.png"))

    student = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    student.set_default_timeout(60_000)
    student.goto(teacher.url)
    student_sidebar = student.locator('[data-testid="stSidebar"]')
    student_sidebar.get_by_text("Run settings").wait_for()
    assert student_sidebar.get_by_role("spinbutton", name="Capacity").input_value() == "2000"
    alpha = student.locator('[data-testid="stSlider"]', has_text="prioritization")
    assert alpha.locator('[data-testid="stSliderThumbValue"]').inner_text() == "0.80"
    assert student_sidebar.get_by_role("combobox", name="Preset").input_value() == "paper"
    _assert_no_exception(student)
    student.screenshot(path=str(ARTIFACTS / "live-settings-student.png"))
    teacher.context.close()
    student.context.close()
