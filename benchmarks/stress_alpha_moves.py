"""How often does a teacher moving α on a busy server leave a white page?

A teacher's tab and a following student's tab on one dashboard server; the teacher's run
trains, and the teacher moves α one step right, then back, ``--moves`` times, 1-3 s apart (each
move restarts the run once the slider settles,
`rdqn.dashboard.control_sync.SETTLE_SECONDS`). ``--hogs`` processes spin on the CPU meanwhile,
as a loaded classroom laptop or CI machine would. A round ends early when either tab throws an
uncaught JavaScript error (Streamlit's front end does when it applies a message to a place that
does not exist, and the tab stays white: see
`rdqn.dashboard.fragments`); the error is recorded. ``--rounds`` rounds, each on a fresh server.
Traffic stays on 127.0.0.1; the script stops every process it starts.

White pages are rare and depend on load, so each round also counts what makes them possible,
whatever the load: references to cached elements that a *page* run sends into a fragment's part
of the page (a fragment's queued run can take back everything around such a reference but not
the reference itself), read from the teacher's WebSocket (`tests.harness.cached_references`).

Usage: python -m benchmarks.stress_alpha_moves [--rounds 5] [--moves 60] [--hogs 4]
           [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, sync_playwright

from benchmarks.provenance import git_commit
from tests.harness.cached_references import CachedReferences
from tests.harness.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.harness.dashboard_server import start_dashboard


def _spin(until: float) -> None:
    while time.monotonic() < until:
        pass


def one_round(browser: Browser, moves: int) -> dict[str, Any]:
    """Moves done, the first uncaught page error (None: every move left a working page), and
    the teacher's tab's `CachedReferences`."""
    home = Path(tempfile.mkdtemp(prefix="rdqn-alpha-moves-"))
    env = {**os.environ, "RDQN_HOME": str(home), "RDQN_MAX_RUNS": "4"}
    process, url = start_dashboard(env)
    errors: list[str] = []
    try:
        contexts = [browser.new_context(viewport={"width": 1600, "height": 1000})]
        contexts.append(browser.new_context(viewport={"width": 1280, "height": 720}))
        for context in contexts:
            context.on("weberror", lambda error: errors.append(error.error.message))
        teacher = contexts[0].new_page()
        teacher.set_default_timeout(60_000)
        references = CachedReferences()
        teacher.on("websocket", references.watch)
        teacher.goto(f"{url}/live?steps=1000000")
        teacher.get_by_role("button", name="Start", exact=True).click()
        teacher.locator('[data-testid="stProgress"]', has_text="running").first.wait_for()
        teacher.get_by_role("button", name="Share with the class").click()
        panel = teacher.locator('[data-testid="stPopoverBody"]')
        link = panel.locator('[data-testid="stCode"]').first.inner_text().strip()
        teacher.keyboard.press("Escape")
        student = contexts[1].new_page()
        student.goto(link)
        student.get_by_text("Following class").wait_for()
        thumb = teacher.locator('[data-testid="stSlider"]', has_text="prioritization")
        done = 0
        for move in range(moves):
            if errors:
                break
            thumb.get_by_role("slider").focus(timeout=30_000)
            thumb.get_by_role("slider").press("ArrowRight" if move % 2 == 0 else "ArrowLeft")
            done += 1
            teacher.wait_for_timeout(1000 + (move * 370) % 2000)
        for context in contexts:
            context.close()
        return {
            "moves": done,
            "page_error": errors[0] if errors else None,
            **references.counts(),
        }
    finally:
        process.terminate()
        process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--moves", type=int, default=60)
    parser.add_argument("--hogs", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rounds = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for number in range(args.rounds):
            hogs = [
                multiprocessing.Process(target=_spin, args=(time.monotonic() + 600,), daemon=True)
                for _ in range(args.hogs)
            ]
            for hog in hogs:
                hog.start()
            try:
                result = one_round(browser, args.moves)
            finally:
                for hog in hogs:
                    hog.terminate()
            rounds.append(result)
            print(f"round {number + 1}: {result}", flush=True)
        browser.close()
    summary = {
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%d"),
        "rounds": rounds,
        "moves": sum(r["moves"] for r in rounds),
        "white_pages": sum(r["page_error"] is not None for r in rounds),
        "page_run_references_in_fragments": sum(
            r["page_run_references_in_fragments"] for r in rounds
        ),
        "hogs": args.hogs,
        "cores": os.cpu_count(),
    }
    print(
        f"{summary['white_pages']} white pages in {summary['moves']} moves of α; "
        f"{summary['page_run_references_in_fragments']} references sent by page runs into "
        "fragments"
    )
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
