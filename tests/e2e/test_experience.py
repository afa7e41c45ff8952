"""End-to-end: the experience on screen. Watch it play animates a greedy episode whose drawn pole
is at the angle the run sent; the greedy returns are on the reward chart; the memory explorer's
P(i) and IS weight of a memory are the sampler's own, read back through the library from the
paused run's checkpoint; a click carries the memory to One update by hand; the lesson
what-gets-replayed shows, step by step, what its text says."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page

from rdqn.config import RunConfig
from rdqn.runs.checkpoints import load_checkpoint
from rdqn.runs.store import RunStore
from rdqn.training.trainer import Trainer
from tests.e2e.browser import (
    ARTIFACTS,
    GREEDY_POINTS,
    act_until,
    another_browser,
    assert_no_exception,
    read_player,
    saying_what_the_page_shows,
    shown_box,
    wait_for_greedy_points,
    wait_until_shown,
)
from tests.harness.live_page import run_on_screen
from tests.run_helpers import wait_for

# One reading of the player, taken at once: the frame on show, the pole as drawn, the pose sent.
_PLAYER = """() => {
    const svg = document.getElementById('stage');
    const pole = document.getElementById('pole');
    const t = Number(svg.dataset.frame);
    const [x1, y1, x2, y2] = ['x1', 'y1', 'x2', 'y2'].map(a => Number(pole.getAttribute(a)));
    return {frame: t, drawn: Math.atan2(x2 - x1, y1 - y2), sent: E.poses[t][1],
            frames: E.poses.length, env_steps: E.env_steps};
}"""


def player(page: Page):  # noqa: ANN201 - the Watch it play iframe
    return page.frame_locator(".st-key-live_area_watch iframe").first


def _animates_as_sent(page: Page) -> None:
    """Two readings of the player, a frame apart in the same episode: each pole drawn at the
    angle of the pose the run sent for that frame, and the frame moved on by itself (the browser
    animates). A reading while the player is replaced (a newer episode came) is no reading, and
    a newer episode starts the comparison over."""
    player(page).locator("#pole").wait_for()
    first = wait_for(lambda: read_player(page, _PLAYER), 60, what="the player shows nothing")

    def later_frame() -> dict | None:
        reading = read_player(page, _PLAYER)
        if reading is None:
            return None
        if reading["env_steps"] != first["env_steps"] or reading["frames"] != first["frames"]:
            first.update(reading)
            return None
        return reading if reading["frame"] != first["frame"] else None

    second = wait_for(later_frame, 60, what="the player showed no later frame")
    for reading in (first, second):
        assert reading["drawn"] == pytest.approx(reading["sent"], abs=1e-6), reading


def test_watch_it_play_animates_the_episode_the_run_sent(server: str, page: Page) -> None:
    page.goto(f"{server}/live?steps=1000000")
    page.get_by_role("button", name="Start", exact=True).click()
    wait_until_shown(page, page.get_by_role("heading", name="Watch it play"))
    _animates_as_sent(page)
    # Play an episode now: a newer episode of the policy, and a diamond more on the chart.
    before = page.evaluate(GREEDY_POINTS)
    page.get_by_role("button", name="Play an episode now").click()
    wait_for_greedy_points(page, max(before, 1))
    page.get_by_role("button", name="Pause").click()
    page.locator('[data-testid="stProgress"]', has_text="paused").first.wait_for()
    assert_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "watch-it-play.png"))
    # Projector mode, the run paused: the same episode goes on playing, drawn larger.
    page.goto(f"{server}/live?projector=1")
    wait_until_shown(page, page.get_by_role("heading", name="Watch it play"))
    _animates_as_sent(page)
    assert_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "watch-it-play-projector.png"))


def _latex_number(page: Page, name: str) -> float:
    """The number a KaTeX line of One update by hand gives for ``name`` (its TeX source)."""
    sources = page.locator("annotation").all_text_contents()
    for source in sources:
        found = re.search(rf"{re.escape(name)} = ([-\d.]+)(?: \\times 10\^\{{(-?\d+)\}})?$", source)
        if found:
            return float(found.group(1)) * 10 ** int(found.group(2) or 0)
    raise AssertionError(f"no {name} in {sources}")


def click_first_memory(page: Page, listed: str = "") -> None:
    """Click the first row's selection box in the table of memories (of list ``listed``, as its
    key spells it: the table of another list goes away), until One update by hand opens (the
    rows are drawn on a canvas, which has nothing to wait on), and wait for its memory."""
    grid = page.locator(
        f'[class*="st-key-internals-memories_"][class*="_{listed}"] [data-testid="stDataFrame"]'
    )

    def click() -> None:
        box = shown_box(grid, f"no table of memories {listed}")
        page.mouse.click(box["x"] + 12, box["y"] + 35 + 26)

    act_until(
        page, click, "() => location.pathname.endsWith('/by_hand')", "a click on the first memory"
    )
    wait_until_shown(page, page.get_by_text("A memory from run"))  # a loaded CI: 20 s and more


def test_a_memory_s_numbers_are_the_samplers_and_a_click_works_it_by_hand(
    server: str, page: Page, server_home: Path
) -> None:
    page = another_browser(page, 1400, 1000)  # a browser of its own: a run of its own
    page.goto(f"{server}/live?preset=per-notebook&steps=1000000")
    page.get_by_role("button", name="Start", exact=True).click()
    page.locator('[data-testid="stProgress"]', has_text="running").first.wait_for()
    with saying_what_the_page_shows(page):
        page.wait_for_function(
            "() => /([\\d,]+) of/.exec(document.querySelector('[data-testid=\"stProgress\"]')"
            "?.innerText || '')?.[1].replace(/,/g, '') > 3000"
        )
    run_id = run_on_screen(page)
    page.get_by_role("button", name="Pause").click()
    page.locator('[data-testid="stProgress"]', has_text="paused").first.wait_for()
    page.get_by_role("link", name="Replay internals").click()
    wait_until_shown(page, page.get_by_text("memories stored"))
    page.get_by_text("Top by priority", exact=True).click()
    click_first_memory(page, "top-priority")
    assert_no_exception(page)
    about = (
        page.locator('.st-key-hand_memory [data-testid="stMarkdownContainer"]')
        .filter(has_text="A memory from run")
        .first.inner_text()
    )
    slot = int(re.search(r"slot ([\d,]+)", about).group(1).replace(",", ""))
    assert run_id in about
    shown_probability = _latex_number(page, "P(i)")
    shown_weight = _latex_number(page, "w_i")
    page.screenshot(path=str(ARTIFACTS / "memory-by-hand.png"), full_page=True)

    # The library's own: the paused run's checkpoint restored into a trainer of its config.
    with RunStore(server_home / "rdqn.db") as store:
        record = store.get_run(run_id)
    trainer = Trainer(RunConfig.from_dict(record.config))
    checkpoint = Path(record.checkpoint_path)
    trainer.restore(
        load_checkpoint(checkpoint if checkpoint.is_absolute() else server_home / checkpoint)
    )
    probability = float(trainer.buffer.probabilities()[slot])
    weight = float(trainer.buffer.importance_weights([slot], trainer.beta)[0])
    assert shown_probability == pytest.approx(probability, rel=5e-4)
    assert shown_weight == pytest.approx(weight, rel=5e-4)
    top = trainer.buffer.probabilities().argmax()
    assert probability == pytest.approx(float(trainer.buffer.probabilities()[top]))
    assert math.isfinite(weight)
    trainer.close()
    page.context.close()


_EVALUATIONS = """() => {
    const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
    const reward = charts.find(c => (c.querySelector('.gtitle')?.textContent || '')
                                      .includes('Episode return'));
    const plot = reward?.querySelector('.js-plotly-plot');
    const trace = (plot?._fullData || []).find(
        t => t.name === 'greedy evaluation (held-out seeds)');
    return trace && trace.x.length >= 2 ? Array.from(trace.x) : null;
}"""


def test_the_reward_chart_draws_the_runs_greedy_evaluations(server: str, page: Page) -> None:
    """?eval=500: every 500 env steps the run plays its greedy policy on the held-out seeds, and
    the reward chart draws each evaluation's mean return, at 500, 1,000, ... env steps."""
    page = another_browser(page, 1400, 1000)  # a browser of its own: a run of its own
    page.goto(f"{server}/live?preset=per-notebook&steps=1000000&eval=500")
    page.get_by_role("button", name="Start", exact=True).click()
    with saying_what_the_page_shows(page):
        steps = page.wait_for_function(_EVALUATIONS).json_value()
    assert steps[:2] == [500, 1000], steps
    page.get_by_role("button", name="Pause").click()
    page.locator('[data-testid="stProgress"]', has_text="paused").first.wait_for()
    assert_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "greedy-evaluation.png"))
    page.context.close()


# The player's frame on show, read at once: is every cell coloured by the code the run sent?
_FRAME = """() => {
    const svg = document.getElementById('stage');
    const t = Number(svg.dataset.frame);
    const cells = [...svg.querySelectorAll('rect')].slice(0, 100);
    return {frame: t, env_steps: E.env_steps, filled: E.poses[t].filter(c => c > 0).length,
            as_sent: cells.length === 100 && cells.every(
                (cell, i) => cell.getAttribute('fill') === E.colors[E.poses[t][i]]),
            legend: E.legend, actions: E.action_labels};
}"""


def test_a_minatar_game_plays_as_frames_and_its_memories_are_frames(
    server: str, page: Page
) -> None:
    """The minatar preset on Breakout: Watch it play draws the 10x10 frame the run sent, each
    cell in its object's colour, with the game's legend and moves; the memory explorer draws
    each stored frame."""
    page = another_browser(page, 1400, 1000)  # a browser of its own: a run of its own
    page.goto(f"{server}/live?preset=minatar&steps=1000000")
    page.get_by_role("button", name="Start", exact=True).click()
    wait_until_shown(page, page.get_by_role("heading", name="Watch it play"))
    player(page).locator('svg[data-cells="100"]').wait_for()
    reading = wait_for(lambda: read_player(page, _FRAME), 60, what="the player shows nothing")
    assert reading["as_sent"] and reading["filled"] > 0, reading
    assert reading["legend"] == ["paddle", "ball", "trail", "brick"]
    assert reading["actions"] == ["no-op", "← left", "→ right"]
    watch = page.locator(".st-key-live_area_watch")
    shown_box(watch, "no Watch it play")
    wait_until_shown(page, page.get_by_text(re.compile(r"until the game ended|time limit")))
    page.screenshot(path=str(ARTIFACTS / "minatar-watch.png"))
    page.get_by_role("button", name="Pause").click()
    page.locator('[data-testid="stProgress"]', has_text="paused").first.wait_for()
    page.get_by_role("link", name="Replay internals").click()
    wait_until_shown(page, page.get_by_text("memories stored"))
    page.locator('[data-testid="stDataFrame"]').first.wait_for(state="visible")
    surprise = (
        page.locator('[data-testid="stPlotlyChart"]').filter(has_text="Where the surprise").first
    )
    wait_until_shown(page, surprise.get_by_text("cells showing an object").first)
    assert_no_exception(page)
    shown_box(surprise, "no chart of where the surprise is")
    page.screenshot(path=str(ARTIFACTS / "minatar-memories.png"))
    click_first_memory(page)
    assert_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "minatar-by-hand.png"), full_page=True)
    page.context.close()


def test_a_sequence_replay_s_memories_are_its_sequences(server: str, page: Page) -> None:
    """R2D2's sequences set by address on the recurrent lesson preset: the run trains, and
    Replay internals lists its sequences, draws their steps' |δ_t| and speaks of sequences in its
    charts' notes (no endless "Asking the run for its replay memory…")."""
    page = another_browser(page, 1400, 1000)
    page.goto(
        f"{server}/live?preset=e14-lesson&mode=sequences&seq=16&overlap=8&burnin=8&batch=8"
        "&steps=1000000"
    )
    page.get_by_role("button", name="Start", exact=True).click()
    with saying_what_the_page_shows(page):
        page.wait_for_function(
            "() => /([\\d,]+) of/.exec(document.querySelector('[data-testid=\"stProgress\"]')"
            "?.innerText || '')?.[1].replace(/,/g, '') > 1500"
        )
    page.get_by_role("button", name="Pause").click()
    page.locator('[data-testid="stProgress"]', has_text="paused").first.wait_for()
    page.get_by_role("link", name="Replay internals").click()
    wait_until_shown(page, page.get_by_text(re.compile(r"sequences of up to 16 steps stored")))
    page.get_by_text("Top by priority", exact=True).click()
    steps = page.locator('[data-testid="stPlotlyChart"]').filter(has_text="Each sequence's steps")
    wait_until_shown(page, steps.get_by_text("step t of the sequence").first)
    wait_until_shown(page, page.get_by_text("One dot per replayed sequence").first)
    assert_no_exception(page)
    page.mouse.wheel(0, 500)  # to the chart (redrawn every refresh: no element to scroll to)
    page.screenshot(path=str(ARTIFACTS / "sequence-memories.png"))
    page.context.close()
