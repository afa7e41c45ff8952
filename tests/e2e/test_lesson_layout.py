"""A lesson on a projector's first screen: at 1280×720 the lesson panel and the area
its step outlines are on screen without scrolling, projector legends stay inside their charts,
the live charts never go blank between their redraws, an unknown ``?lesson=`` is named without
a traceback, and Back from step 5 to 4 of alpha-beta is step 4 again.

The server's log holds no traceback (`streamlit_server` asserts it)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from rdqn.dashboard.guided import LESSON_FOLDER, GuidedLesson
from rdqn.dashboard.lesson_file import load_lesson
from rdqn.runs.store import RunStore
from tests.e2e.browser import (
    ARTIFACTS,
    act_until,
    another_browser,
    assert_no_exception,
    read_player,
    run_on_screen,
    saying_what_the_page_shows,
    streamlit_server,
)
from tests.harness.cached_references import CachedReferences
from tests.run_helpers import wait_for

WIDTH, HEIGHT = 1280, 720

# The chart a live chart area shows: of its two stacked slots
# (`rdqn.dashboard.display.steady_chart`), the one raised above the other, or the only one.
TOP_CHART = """area => {
  const charts = [...area.querySelectorAll('[data-testid="stPlotlyChart"]')];
  const raised = charts.filter(c => {
    const slot = c.closest('.stElementContainer');
    return slot && getComputedStyle(slot).zIndex === '1';
  });
  return raised[0] || charts[charts.length - 1];
}"""
# Where the lesson panel, the outlined area and, for a chart, its legend and plot area lie
# (viewport pixels: left, top, right, bottom).
BOXES = f"""() => {{
  const topChart = {TOP_CHART};
  const box = e => {{ const b = e.getBoundingClientRect();
                     return [b.left, b.top, b.right, b.bottom]; }};
  const drawn = e => e && e.getBoundingClientRect().width > 0;
  const outlined = [...document.querySelectorAll('[class*="st-key-live_area_"]')]
    .filter(e => getComputedStyle(e).outlineStyle === 'solid');
  const area = outlined[0];
  const chart = area && /live_area_(reward|loss)/.test(area.className) ? topChart(area) : null;
  const legend = chart && chart.querySelector('.legend');
  const plot = chart && chart.querySelector('.nsewdrag');
  return {{
    panel: box(document.querySelector('.st-key-live_lesson')),
    outlined: outlined.map(e => e.className.match(/live_area_(\\w+)/)[1]),
    area: area ? box(area) : null,
    chart: !!chart,
    legend: drawn(legend) ? box(legend) : null,
    plot: drawn(plot) ? box(plot) : null,
  }};
}}"""
# Whether the outlined area is drawn: a chart with its legend (its run has data), or the
# controls or counters.
OUTLINED_DRAWN = f"""() => {{
  const topChart = {TOP_CHART};
  const area = [...document.querySelectorAll('[class*="st-key-live_area_"]')]
    .find(e => getComputedStyle(e).outlineStyle === 'solid');
  if (!area) return false;
  if (!/live_area_(reward|loss)/.test(area.className)) return area.offsetHeight > 0;
  const legend = topChart(area)?.querySelector('.legend');
  return !!legend && legend.getBoundingClientRect().width > 0;
}}"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rdqn-home")


@pytest.fixture(scope="module")
def served(home: Path) -> Iterator[str]:
    with streamlit_server(home, "server-lesson-layout.log") as (url, _):
        yield url


def lesson(key: str) -> GuidedLesson:
    return load_lesson(LESSON_FOLDER / f"{key}.toml")


def open_lesson(page: Page, served: str, key: str, *, projector: bool = False) -> Page:
    """A 1280×720 browser of its own at step 1 of lesson ``key``, its run started."""
    tab = another_browser(page, WIDTH, HEIGHT, timeout_s=120)
    tab.goto(f"{served}/live?lesson={key}" + ("&projector=1" if projector else ""))
    panel = tab.locator(".st-key-live_lesson")
    with saying_what_the_page_shows(tab):
        panel.get_by_text(f"step 1 of {len(lesson(key).steps)}").wait_for()
        tab.get_by_role("button", name="Start", exact=True).click()
        tab.locator('[data-testid="stProgress"]', has_text="running").first.wait_for()
    return tab


def go_to(tab: Page, key: str, number: int, button: str = "Next") -> None:
    """Next (or Back) to step ``number``; returns once its outlined area is drawn."""
    act_until(  # a click can be lost to a rerun that redraws the button
        tab,
        tab.get_by_role("button", name=button, exact=True).click,
        f"""() => document.querySelector('.st-key-live_lesson')?.innerText
                     .includes('step {number} of {len(lesson(key).steps)}')""",
        what=f"{button} to step {number}",
    )
    with saying_what_the_page_shows(tab):
        tab.wait_for_function(OUTLINED_DRAWN)


def assert_first_screen_holds_the_step(tab: Page, key: str, number: int) -> None:
    """The panel whole, and the outlined area whole: the counters, the controls, or a chart
    with its title, legend, plot and axis titles."""
    with saying_what_the_page_shows(tab):
        tab.wait_for_function(OUTLINED_DRAWN)
        # Read once the page has settled on the step: its area outlined and drawn where the
        # step puts it (a redraw raises a chart's new slot before Plotly has drawn it, and the
        # last step's counters stay drawn below the charts until the page run replaces them),
        # and no element left stale by the run (a loaded CI once read the counters outlined but
        # still below the charts, at 676 px, while the run that moves them above was drawing).
        boxes = tab.wait_for_function(
            f"""() => {{ const b = ({BOXES})();
                        const settled = b.outlined.join() === {lesson(key).step(number).highlight!r}
                                        && b.area && b.area[1] < {HEIGHT}
                                        && !document.querySelector('[data-stale="true"]');
                        return settled && (!b.chart || b.legend) ? b : null; }}"""
        ).json_value()
    shown = f"{key} step {number} at {WIDTH}×{HEIGHT}: {boxes}"
    assert boxes["outlined"] == [lesson(key).step(number).highlight], shown
    left, top, right, bottom = boxes["panel"]
    assert top >= 0 and bottom <= HEIGHT, f"the panel is cut: {shown}"
    area_top, area_bottom = boxes["area"][1], boxes["area"][3]
    assert area_top >= 0 and area_bottom <= HEIGHT, f"the outlined area is cut: {shown}"


@pytest.mark.parametrize("projector", [False, True], ids=["plain", "projector"])
@pytest.mark.parametrize("key", ["alpha-beta", "schemes", "why-prioritize", "alpha"])
def test_every_step_of_a_lesson_fits_the_first_screen(
    page: Page, served: str, key: str, projector: bool
) -> None:
    """Every step's outlined area whole on a 1280×720 screen, under the lesson's panel (once
    730-840 px down: why-prioritize steps 4-5, alpha-beta steps 1-3, schemes steps 1-4), and in
    projector mode (a chart's bottom once at 798 px in every lesson's first step)."""
    tab = open_lesson(page, served, key, projector=projector)
    for number in range(1, len(lesson(key).steps) + 1):
        if number > 1:
            go_to(tab, key, number)
        # Measured once the step's run trains or has ended: a run brought back goes on where it
        # stopped, and while it restarts its counters once stood 400 px lower (a loaded CI).
        with saying_what_the_page_shows(tab):
            tab.wait_for_function(
                """() => [...document.querySelectorAll('[data-testid="stProgress"]')]
                         .some(p => /^(running|finished)/.test(p.innerText))"""
            )
        assert_first_screen_holds_the_step(tab, key, number)
        mode = "-projector" if projector else ""
        tab.screenshot(path=str(ARTIFACTS / f"lesson-layout-{key}{mode}-{number}.png"))
        assert_no_exception(tab)
    tab.context.close()


def test_projector_legends_stay_inside_their_charts(page: Page, served: str) -> None:
    """Step 2 of alpha-beta draws the previous run's long label in both legends; at 18 px it ran
    past the right edge of the narrow loss chart (1243 px for a chart ending at 1200)."""
    tab = open_lesson(page, served, "alpha-beta")
    with saying_what_the_page_shows(tab):  # step 1's run has learned: its |TD error| is step 2's
        tab.locator(".st-key-live_area_loss .legend").first.wait_for()  # overlay in that chart
    go_to(tab, "alpha-beta", 2)
    tab.get_by_text("Projector mode", exact=True).click()
    with saying_what_the_page_shows(tab):
        tab.wait_for_function(
            """() => [...document.querySelectorAll('.st-key-live_area_loss .legendtext')]
                     .some(t => t.textContent.startsWith('previous:')
                                && parseFloat(getComputedStyle(t).fontSize) >= 18)"""
        )
    legends = tab.evaluate(
        """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
                 .filter(c => c.getBoundingClientRect().width > 0 && c.querySelector('.legend'))
                 .map(c => { const b = c.getBoundingClientRect();
                             const l = c.querySelector('.legend').getBoundingClientRect();
                             return {chart: [b.left, b.top, b.right, b.bottom],
                                     legend: [l.left, l.top, l.right, l.bottom],
                                     font: parseFloat(getComputedStyle(
                                       c.querySelector('.legendtext')).fontSize)}; })"""
    )
    projected = [each for each in legends if each["font"] >= 18]
    assert len(projected) >= 2, legends  # the reward and the loss chart
    for each in projected:
        chart, legend = each["chart"], each["legend"]
        assert chart[0] <= legend[0] and legend[2] <= chart[2] + 0.5, f"legend cut: {each}"
        assert chart[1] <= legend[1] and legend[3] <= chart[3], f"legend cut: {each}"
    tab.locator(".st-key-live_area_loss").screenshot(
        path=str(ARTIFACTS / "lesson-layout-projector-loss.png")
    )
    tab.context.close()


# Counts, once per animation frame (what a person sees), the frames in which a live chart's
# area has no drawn chart: none there, or no drawn Plotly SVG.
COUNT_BLANK_FRAMES = """() => {
  const seen = window.blankFrames = {frames: 0, blank: 0, first: [], start: performance.now()};
  const blank = () => ['reward', 'loss'].filter(name => {
    const area = document.querySelector('.st-key-live_area_' + name);
    return !area || ![...area.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg')]
      .some(svg => { const b = svg.getBoundingClientRect(); return b.width > 0 && b.height > 0; });
  });
  const frame = () => {
    seen.frames += 1;
    const missing = blank();
    if (missing.length) {
      seen.blank += 1;
      if (seen.first.length < 100) seen.first.push([performance.now() - seen.start, missing]);
    }
    if (!seen.stop) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}"""


PAGE_RUN_BLANK_FRAMES = 10
"""At most this many frames without a chart after a click: a page run sends the charts whole
and the browser mounts them anew (`rdqn.dashboard.fragments`), a frame or two on a loaded
machine."""


def test_the_charts_never_go_blank_between_redraws(page: Page, served: str) -> None:
    """About 10 s of a training run's page, Reset (a new run, with no data for a moment)
    halfway. Before: a chart went blank about once a second (Streamlit mounted every redrawn
    chart anew) and both charts vanished for a second after the Reset. Now no frame lacks a
    chart before the Reset, and the page run of the Reset takes at most a few frames. No page
    run sends a chart as a reference to one the browser cached (`rdqn.dashboard.fragments`)."""
    tab = another_browser(page, WIDTH, HEIGHT, timeout_s=120)
    references = CachedReferences()
    tab.on("websocket", references.watch)
    tab.goto(f"{served}/live?steps=1000000")
    tab.get_by_role("button", name="Start", exact=True).click()
    with saying_what_the_page_shows(tab):
        tab.locator(".st-key-live_area_reward .legend").first.wait_for()
        tab.locator(".st-key-live_area_loss .legend").first.wait_for()
    first_run = run_on_screen(tab)
    tab.evaluate(COUNT_BLANK_FRAMES)
    elapsed = "ms => performance.now() - window.blankFrames.start > ms"
    tab.wait_for_function(elapsed, arg=5_000, polling=250)
    clicked = tab.evaluate("() => performance.now() - window.blankFrames.start")
    tab.get_by_role("button", name="Reset", exact=True).click()
    with saying_what_the_page_shows(tab):
        tab.wait_for_function(
            """run => [...document.querySelectorAll('[data-testid="stProgress"]')]
                     .some(p => /run [0-9a-f]{12}/.test(p.innerText)
                                && !p.innerText.includes(run))""",
            arg=first_run,
        )
    tab.wait_for_function(elapsed, arg=10_000, polling=250)
    seen = tab.evaluate("() => { window.blankFrames.stop = true; return window.blankFrames; }")
    assert seen["frames"] >= 50, seen  # the page was drawn throughout
    before = [at for at, _ in seen["first"] if at < clicked]
    assert not before, f"{len(before)} frames lacked a chart between redraws: {seen}"
    assert seen["blank"] <= PAGE_RUN_BLANK_FRAMES, f"the Reset's charts vanished: {seen}"
    # What could have left the tab white: a page run's reference to a cached chart
    counts = references.counts()
    assert counts["page_runs"] >= 2 and counts["page_run_references_in_fragments"] == 0, counts
    tab.get_by_role("button", name="Pause").click()
    tab.context.close()


def test_an_unknown_lesson_is_named_with_the_lessons_there_are(page: Page, served: str) -> None:
    """``?lesson=broken``: a note names the link's lesson and the lessons on offer; no panel, no
    error, and the page works as without the link."""
    tab = another_browser(page, WIDTH, HEIGHT)
    tab.goto(f"{served}/live?lesson=broken")
    note = tab.locator('[data-testid="stAlert"]', has_text="URL note")
    with saying_what_the_page_shows(tab):
        note.first.wait_for()
        tab.get_by_role("button", name="Start", exact=True).wait_for()
    text = note.first.inner_text().replace("\\", "")
    assert "lesson='broken'" in text and "alpha-beta" in text, text
    assert tab.locator(".st-key-live_lesson").count() == 0
    assert_no_exception(tab)
    tab.screenshot(path=str(ARTIFACTS / "lesson-layout-broken.png"))
    tab.context.close()


def stored_replay(home: Path, run_id: str) -> tuple[str, float, float]:
    with RunStore(home / "rdqn.db") as store:
        replay = store.get_run(run_id).config["replay"]
    return replay["scheme"], replay["alpha"], replay["beta0"]


def test_back_from_step_5_to_4_is_step_4(page: Page, served: str, home: Path) -> None:
    """alpha-beta step 4 brings back step 2's run (α 1, β₀ 0.4): Back from step 5 shows step
    4's title and notice as the lesson file has them, outlines its area, and shows that run
    training on (its notice has the β counter rise) with those settings in the store; no error
    (it once raised KeyError 'live.alpha')."""
    key = "alpha-beta"
    alpha_beta = lesson(key)
    tab = open_lesson(page, served, key)
    runs = {1: run_on_screen(tab)}
    for number in range(2, 6):
        go_to(tab, key, number)
        if alpha_beta.step(number).run == "start":
            with saying_what_the_page_shows(tab):
                tab.wait_for_function(
                    """old => [...document.querySelectorAll('[data-testid="stProgress"]')]
                             .some(p => /run [0-9a-f]{12}/.test(p.innerText)
                                        && !old.some(run => p.innerText.includes(run)))""",
                    arg=list(runs.values()),
                )
            runs[number] = run_on_screen(tab)
    go_to(tab, key, 4, button="Back")
    step = alpha_beta.step(4)
    panel = tab.locator(".st-key-live_lesson").inner_text()
    assert step.title in panel, panel
    notice = re.sub(r"\*\*(.+?)\*\*", r"\1", step.notice)  # as Markdown draws it
    assert notice in " ".join(panel.split()), panel
    wanted = runs[alpha_beta.run_step(4)]
    with saying_what_the_page_shows(tab):  # trains on where step 3 stopped it ("β rises")
        tab.wait_for_function(
            """run => [...document.querySelectorAll('[data-testid="stProgress"]')]
                     .some(p => p.innerText.startsWith('running')
                                && p.innerText.includes('run ' + run))""",
            arg=wanted,
        )
    config = alpha_beta.config(4).replay
    assert stored_replay(home, wanted) == (config.scheme, config.alpha, config.beta0)
    with saying_what_the_page_shows(tab):  # a rerun may still show the stale area beside it
        tab.wait_for_function(
            f"want => JSON.stringify(({BOXES})().outlined) === JSON.stringify([want])",
            arg=step.highlight,
        )
    assert_no_exception(tab)
    tab.screenshot(path=str(ARTIFACTS / "lesson-layout-back-to-4.png"))
    tab.context.close()


def _episode_on_show(tab: Page) -> dict:
    """What Watch it play shows: the policy's age in env steps and the frames, from the player."""
    script = "() => ({env_steps: E.env_steps, frames: E.poses.length})"
    return wait_for(lambda: read_player(tab, script), 60, what="the player shows no episode")


def test_every_what_gets_replayed_step_shows_what_its_text_says(page: Page, served: str) -> None:
    """Each step's outlined area on the first screen at 1280×720, and what its text speaks of:
    the untrained agent playing, the greedy returns on the reward chart, the trained agent with
    Play an episode now, the counters, and the uniform run started for contrast, playing."""
    key = "what-gets-replayed"
    tab = open_lesson(page, served, key)
    assert_first_screen_holds_the_step(tab, key, 1)
    tab.locator(".st-key-live_area_watch iframe").first.wait_for()
    assert _episode_on_show(tab)["env_steps"] < 2_000  # the policy before much training
    tab.screenshot(path=str(ARTIFACTS / f"lesson-layout-{key}-1.png"))
    go_to(tab, key, 2)
    assert_first_screen_holds_the_step(tab, key, 2)
    with saying_what_the_page_shows(tab):
        tab.wait_for_function(
            """() => [...document.querySelectorAll('.js-plotly-plot')].some(p =>
                 (p._fullData || []).some(t => t.name === 'greedy return (watched)'))"""
        )
    go_to(tab, key, 3)
    assert_first_screen_holds_the_step(tab, key, 3)
    # While the page runs, the panel where step 2 drew it may still fade beside step 3's.
    tab.get_by_role("button", name="Play an episode now").first.wait_for()
    tab.screenshot(path=str(ARTIFACTS / f"lesson-layout-{key}-3.png"))
    go_to(tab, key, 4)
    assert_first_screen_holds_the_step(tab, key, 4)
    go_to(tab, key, 5)
    assert_first_screen_holds_the_step(tab, key, 5)
    with saying_what_the_page_shows(tab):
        tab.locator('[data-testid="stProgress"]', has_text="(uniform").first.wait_for()
    assert_no_exception(tab)
    tab.context.close()
