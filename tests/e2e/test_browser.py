"""End-to-end: the real app in Debian's Chromium, driven by Playwright.

Starts `streamlit run app.py` on a free local port with its own RDQN_HOME (runs train in worker
processes, the default), then acts as teachers and students: start the demo, watch the reward
curve grow, move alpha and see the run restart, hide the stopped run in Saved runs, draw a batch
on the sum-tree page; set up a run and open its URL in another session; open a new session
while other sessions' runs train; close the server and find no worker process left. Fails
(never skips) when Chromium is missing, so CI cannot pass without it. Screenshots and server
logs go to tests/artifacts/.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from playwright.sync_api import Page

from tests.e2e.browser import (
    ARTIFACTS,
    act_until,
    another_browser,
    assert_no_exception,
    metric,
    never_within,
    progress_text,
    run_on_screen,
    saying_what_the_page_shows,
    start_a_run,
    steps_done,
    streamlit_server,
    wait_for_address,
    wait_for_an_episode_after,
    wait_for_metric,
)
from tests.run_helpers import wait_for


def test_demo_trains_alpha_restarts_and_sum_tree_draws(server: str, page: Page) -> None:
    page.goto(server)
    page.get_by_role("button", name="Start demo").click()
    page.wait_for_url(re.compile(r".*/live.*"))
    page.locator('[data-testid="stMetric"]', has_text="Env steps").first.wait_for()
    first_steps = metric(page, "Env steps")
    first_end = wait_for_an_episode_after(page, 0)  # a reward curve appears
    wait_for_an_episode_after(page, first_end)  # and grows
    # The counters go on too: in a later redraw, not necessarily in the one the curve grew in
    # (the chart read is the steady chart's first slot, a redraw behind every other second, so
    # on a busy machine it can catch up with counters whose snapshot has not changed since).
    wait_for_metric(page, "Env steps", f"v > {first_steps}")
    assert_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "live.png"), full_page=True)
    # Four of plotly's toolbar buttons (and Streamlit's fullscreen), so that the toolbar shown
    # on hover stays clear of the titles of charts in narrow columns (Replay internals).
    toolbar = page.evaluate(
        """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"] .modebar')]
                 .map(bar => [...bar.querySelectorAll('.modebar-btn')]
                             .map(button => button.getAttribute('data-title')))"""
    )
    assert toolbar and all(
        buttons == ["Download plot as a PNG", "Zoom", "Pan", "Reset axes", "Fullscreen"]
        for buttons in toolbar
    ), toolbar

    run_before = run_on_screen(page)
    alpha = page.locator('[data-testid="stSlider"]', has_text="prioritization")
    # The demo's own settings, not Streamlit's defaults a lazily mounted control once sent back.
    assert alpha.locator('[data-testid="stSliderThumbValue"]').inner_text() == "0.60"
    assert page.url.endswith("/live?preset=demo"), page.url
    thumb = alpha.get_by_role("slider")
    thumb.focus()
    for _ in range(3):
        thumb.press("ArrowRight")
    page.wait_for_function(
        f"""() => [...document.querySelectorAll('[data-testid="stProgress"]')]
                 .some(el => el.innerText.includes('run ')
                             && !el.innerText.includes('{run_before}'))"""
    )
    assert run_on_screen(page) != run_before
    # The address follows the slider (0.75, or less where a loaded machine's rerun took the
    # slider's focus before every key press reached it).
    page.wait_for_function(
        """() => {
             const thumb = document.querySelector('input[aria-label="α (prioritization)"]');
             const alpha = new URLSearchParams(location.search).get('alpha');
             const shown = thumb ? Number(thumb.value) : NaN;
             return alpha !== null && shown > 0.6 && Math.abs(Number(alpha) - shown) < 1e-9;
           }"""
    )
    # One restart for three key presses: the dashed previous run is the run before them.
    page.wait_for_function(
        """() => [...document.querySelectorAll('.legendtext')]
                 .some(t => t.textContent.startsWith('previous: proportional · α 0.6 · β₀ 0.4'))"""
    )
    assert_no_exception(page)

    # The restart left the run before it in Saved runs as "stopped": the filter hides it. It
    # stops once it has saved its resume checkpoint (its worker's first: its torch optimizer's
    # import, about a second of CPU, seconds on a loaded machine), often after the page opened:
    # the page shows it so once the store says it (`rdqn.dashboard.saved_runs`).
    page.get_by_role("link", name="Saved runs").first.click()
    cells = '[data-testid="stDataFrame"] [role="gridcell"]'
    listed = f"""() => [...document.querySelectorAll('{cells}')]
                       .some(cell => cell.innerText.includes('{run_before[:6]}'))"""
    page.wait_for_function(listed)
    act_until(
        page,
        # (1), or more where a loaded machine's page sent the key presses in two restarts
        lambda: page.get_by_role("button", name=re.compile(r"^stopped \(\d+\)$")).click(),
        f"() => !({listed})()",
        what="hiding the stopped run",
    )
    assert_no_exception(page)

    page.get_by_role("link", name="Sum tree").first.click()
    page.get_by_role("button", name="Draw a batch").first.click()
    page.get_by_text("and the nodes each descent visits").wait_for()  # the batch's queries
    assert_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "sum_tree.png"), full_page=True)


def test_settings_form_and_shared_url_reproduce_the_setup_in_another_session(
    server: str, page: Page
) -> None:
    """A teacher sets up a run (URL and form), a student opens the copied address in a browser
    session of their own and sees the same setup."""
    teacher = another_browser(page, 1280, 720)
    teacher.goto(f"{server}/live?preset=paper&alpha=0.8")
    sidebar = teacher.locator('[data-testid="stSidebar"]')
    capacity = sidebar.get_by_role("spinbutton", name="Capacity")

    def apply_capacity() -> None:
        capacity.fill("2000")
        sidebar.get_by_role("button", name="Apply and restart").click()

    act_until(teacher, apply_capacity, "() => location.search.includes('capacity=2000')", "Apply")
    teacher.locator('[data-testid="stProgress"]').first.wait_for()
    wait_for_address(teacher, has=("alpha=0.8", "preset=paper"))
    assert_no_exception(teacher)
    teacher.screenshot(path=str(ARTIFACTS / "live-settings-teacher.png"))

    student = another_browser(page, 1280, 720)
    student.goto(teacher.url)
    student_sidebar = student.locator('[data-testid="stSidebar"]')
    student_sidebar.get_by_text("Run settings").wait_for()
    assert student_sidebar.get_by_role("spinbutton", name="Capacity").input_value() == "2000"
    alpha = student.locator('[data-testid="stSlider"]', has_text="prioritization")
    assert alpha.locator('[data-testid="stSliderThumbValue"]').inner_text() == "0.80"
    assert student_sidebar.get_by_role("combobox", name="Preset").input_value() == "paper"
    assert_no_exception(student)
    student.screenshot(path=str(ARTIFACTS / "live-settings-student.png"))
    teacher.context.close()
    student.context.close()


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process on this machine."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if stat[0] == "Z":
                    continue  # a zombie has ended
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                table[int(entry.name)] = (int(stat[1]), command)
    return table


def _descendants(root: int) -> set[int]:
    table, found, frontier = _processes(), set(), {root}
    while frontier:
        children = {pid for pid, (parent, _) in table.items() if parent in frontier}
        found |= children
        frontier = children
    return found


def test_a_new_session_is_served_while_runs_train_in_worker_processes(
    page: Page, server: str
) -> None:
    """Two sessions keep runs training; a third opens the live page, starts its own run and
    sees it train, because training happens in worker processes, not the server (how soon:
    benchmarks/bench_page_load.py)."""
    url = server
    page.goto(f"{url}/live")  # an earlier test's session: a run still training pauses
    pause = page.get_by_role("button", name="Pause")
    pause.or_(page.get_by_role("button", name="Start", exact=True)).first.wait_for()
    if pause.count() and pause.is_enabled():
        pause.click()
    sessions = []
    for _ in range(2):
        tab = another_browser(page, 1400, 1000)
        start_a_run(tab, url)
        # The run trains on while its tab shows another page: this machine's two cores then
        # serve the newcomer, not two more browsers redrawing charts every second.
        tab.get_by_role("link", name="One update by hand").first.click()
        sessions.append(tab)
    newcomer = another_browser(page, 1280, 720)
    start_a_run(newcomer, url)
    wait_for_metric(newcomer, "Env steps", f"v > {metric(newcomer, 'Env steps')}")  # it trains
    assert_no_exception(newcomer)
    newcomer.screenshot(path=str(ARTIFACTS / "live-while-others-train.png"))
    # The runs train in worker processes forked by the zygote: one per training session.
    zygotes = [pid for pid, (_, command) in _processes().items() if "rdqn.serve.zygote" in command]
    workers = {pid for zygote in zygotes for pid in _descendants(zygote)}
    assert len(workers) >= 3, (zygotes, workers)
    newcomer.get_by_role("button", name="Pause").click()
    for tab in [*sessions, newcomer]:
        tab.context.close()  # the sessions' runs stop soon after (RDQN_RELEASE_GRACE)


def test_run_states_the_idle_rule_closing_the_server_and_resuming_after_it(
    page: Page, tmp_path: Path
) -> None:
    """A teacher pauses and resumes (the page says so), spends longer than the idle timeout on
    another page of the same tab (the run goes on), then the server closes: no worker is left.
    A new server on the same store offers the stopped run to the same browser, and Resume goes
    on where it stopped, under the same id."""
    # The idle timeout is short, but not so short that a loaded machine's slow page refreshes
    # count as a closed page (5 s did once in CI, as the run started on a fresh server).
    with streamlit_server(tmp_path, "server-shutdown.log", RDQN_IDLE_TIMEOUT="8") as (url, server):
        tab = another_browser(page, timeout_s=120)
        start_a_run(tab, url)

        def press(button: str, state: str) -> None:
            control = tab.get_by_role("button", name=button)
            act_until(
                tab,
                lambda: control.click() if control.is_enabled() else None,
                f"""() => [...document.querySelectorAll('[data-testid="stProgress"]')]
                         .some(status => status.innerText.startsWith('{state}'))""",
                button,
            )

        press("Pause", "paused")
        assert tab.get_by_role("button", name="Resume").is_enabled()
        wait_for_metric(tab, "Steps/s", "v === 0")
        press("Resume", "running")
        tab.get_by_role("link", name="One update by hand").first.click()
        tab.get_by_text("The arithmetic for one row").wait_for()
        never_within(  # twice the idle timeout, on a page that polls no run
            tab,
            17,
            """() => document.querySelector('[data-testid="stException"]') !== null""",
            "the by-hand page showed an error while the run trained on",
        )
        tab.get_by_role("link", name="Live training").first.click()
        tab.locator('[data-testid="stProgress"]').first.wait_for()
        assert progress_text(tab).startswith("running"), progress_text(tab)
        assert_no_exception(tab)
        before, done = run_on_screen(tab), steps_done(tab)

        def zygote_and_worker() -> set[int] | None:
            found = _descendants(server.pid)
            return found if len(found) >= 2 else None

        # A loaded machine: /proc may lag the fork the page already shows.
        spawned = wait_for(
            zygote_and_worker,
            what=lambda: f"no zygote and worker under the server: {_descendants(server.pid)}",
            every=0.2,
        )
        server.terminate()  # what Ctrl-C or a service manager's stop does
        server.wait(30)
        context = tab.context  # the same browser (its rdqn_owner cookie) comes back
        tab.close()
    wait_for(
        lambda: not spawned & set(_processes()),
        15,
        what="worker processes outlived their server",
        every=0.2,
    )

    with streamlit_server(tmp_path, "server-after-restart.log") as (url, _):
        tab = context.new_page()
        tab.set_default_timeout(120_000)
        tab.goto(f"{url}/live")
        stopped = tab.get_by_text(f"Run {before} (")
        stopped.wait_for()
        assert stopped.inner_text().endswith("steps: the server shut down"), stopped.inner_text()
        tab.get_by_role("button", name="Resume").first.wait_for()
        tab.screenshot(path=str(ARTIFACTS / "resume-after-restart.png"))
        tab.get_by_role("button", name="Resume").first.click()
        tab.locator('[data-testid="stProgress"]', has_text="running").first.wait_for()
        assert run_on_screen(tab) == before
        assert steps_done(tab) >= done, progress_text(tab)  # on from where it stopped, not 0
        assert_no_exception(tab)
        tab.get_by_role("button", name="Pause").click()
        tab.context.close()


def test_a_class_follows_the_teacher_and_a_student_forks_the_setup(page: Page, server: str) -> None:
    """The teacher shares the class link (QR and copyable), a student opens it in another
    browser session, the teacher restarts with another α and the student's view follows; the
    student then starts a run of their own from the teacher's setup."""
    page.goto(f"{server}/live")  # the earlier tests' session: a run still training pauses
    pause = page.get_by_role("button", name="Pause")
    pause.wait_for()
    if pause.is_enabled():
        pause.click()
    teacher = another_browser(page, 1600, 1000)
    start_a_run(teacher, server)
    first = run_on_screen(teacher)
    teacher.get_by_role("button", name="Share with the class").click()
    panel = teacher.locator('[data-testid="stPopoverBody"]')
    panel.get_by_text("Follow along").wait_for()
    panel.locator("img").wait_for()  # the QR code
    link = panel.locator('[data-testid="stCode"]').first.inner_text().strip()
    assert re.fullmatch(rf"{re.escape(server)}/live\?follow=[A-HJ-NP-Z2-9]{{4}}", link), link
    teacher.screenshot(path=str(ARTIFACTS / "share-with-the-class.png"))
    teacher.keyboard.press("Escape")

    student = another_browser(page, 1280, 720)
    student.goto(link)
    student.get_by_text("Following class").wait_for()
    student.wait_for_function(f"() => document.body.innerText.includes('run {first}')")
    assert not student.locator('[data-testid="stSlider"]', has_text="prioritization").count()

    thumb = teacher.locator('[data-testid="stSlider"]', has_text="prioritization").get_by_role(
        "slider"
    )

    def one_step_right() -> None:
        thumb.focus()
        thumb.press("ArrowRight")

    # Pressed again only if the slider did not move (a rerun that redrew it took the key).
    act_until(
        teacher,
        one_step_right,
        """() => Math.abs(Number(document.querySelector(
                    'input[aria-label="α (prioritization)"]')?.value) - 0.65) < 1e-9""",
        what="moving α one step",
    )
    with saying_what_the_page_shows(teacher):  # and its slider: did α go back?
        teacher.wait_for_function(
            f"""() => [...document.querySelectorAll('[data-testid="stProgress"]')].some(
                        el => el.innerText.includes('run ') && !el.innerText.includes('{first}'))"""
        )
    second = run_on_screen(teacher)
    student.wait_for_function(f"() => document.body.innerText.includes('run {second}')")
    assert_no_exception(student)
    student.screenshot(path=str(ARTIFACTS / "student-follows.png"))

    student.get_by_role("button", name="Try this setup myself").click()
    student.wait_for_url(re.compile(r".*alpha=0\.65.*"))
    student.get_by_role("button", name="Pause").wait_for()
    wait_for_address(student, lacks=("follow=",))
    assert student.locator('[data-testid="stSlider"]', has_text="prioritization").count() == 1
    assert_no_exception(student)

    # A mistyped run link: said so, and there is no setup to copy (the click was an error page).
    student.goto(f"{server}/live?run=deadbeef0000")
    student.get_by_text("No run with id 'deadbeef0000' on this server.").wait_for()
    assert student.get_by_role("button", name="Try this setup myself").is_disabled()
    assert_no_exception(student)
    student.goto(f"{server}/live")  # back to its own run, to pause it below
    for tab in (teacher, student):
        pause = tab.get_by_role("button", name="Pause").first
        if pause.is_enabled():
            pause.click()
        tab.context.close()


def test_step_after_the_run_ended_starts_a_new_one_and_says_so(server: str, page: Page) -> None:
    page = another_browser(page)  # a session with no run of its own yet
    page.goto(f"{server}/live?steps=300")
    page.get_by_role("button", name="Start", exact=True).click()
    page.locator('[data-testid="stProgress"]', has_text="finished").first.wait_for()
    ended = run_on_screen(page)
    page.get_by_role("button", name="Step", exact=True).click()
    toast = page.locator('[data-testid="stToast"]', has_text="Step started a new run")
    toast.wait_for()
    assert "The ended run is in Saved runs." in toast.inner_text()
    assert "view more" not in toast.inner_text()  # the whole message shows
    page.screenshot(path=str(ARTIFACTS / "step_after_end.png"))
    page.locator('[data-testid="stProgress"]', has_text="paused").first.wait_for()
    assert run_on_screen(page) != ended
    # The run reads "paused" once the step is asked for; its worker takes the step a moment
    # later (a new run's worker may still be starting), and the page then shows it.
    page.wait_for_function(
        r"""() => /(^|[^\d,])1 of 300 steps/.test(
                     document.querySelector('[data-testid="stProgress"]').innerText)"""
    )
    assert steps_done(page) == 1
    assert_no_exception(page)
