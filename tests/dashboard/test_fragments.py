"""rdqn.dashboard.fragments: a fragment drawn in a page run knows it (its charts then go whole), and
every redrawn part of a page waits after drawing, so that the server sends what it drew before
the fragment's next run can take it back (the module's note)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.forward_msg_cache import create_reference_msg, populate_hash_if_needed
from streamlit.runtime.forward_msg_queue import ForwardMsgQueue

from rdqn.dashboard import fragments

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, float]]:
    """What happened, in order: ("draw", x) for a drawing, ("pause", s) for a wait of s s; the
    fragment runs as a plain call (no Streamlit script run here)."""
    events: list[tuple[str, float]] = []
    monkeypatch.setattr(fragments.time, "sleep", lambda s: events.append(("pause", s)))
    monkeypatch.setattr(fragments.st, "fragment", lambda run_every=None: lambda func: func)
    monkeypatch.setattr(fragments, "has_a_browser", lambda: True)
    return events


def test_a_fragment_draws_then_waits_for_the_server_to_send(pauses: list) -> None:
    @fragments.fragment(run_every=1.0)
    def counters(x: int) -> None:
        pauses.append(("draw", float(x)))

    counters(3)
    assert pauses == [("draw", 3.0), ("pause", fragments.SEND_PAUSE_S)]
    assert counters.__qualname__.endswith("counters")  # Streamlit names a fragment by it


def test_a_fragment_that_stops_early_waits_too(pauses: list) -> None:
    @fragments.fragment(run_every=2.0)
    def broken() -> None:
        raise RuntimeError("st.rerun or st.stop end a run this way")

    with pytest.raises(RuntimeError):
        broken()
    assert pauses == [("pause", fragments.SEND_PAUSE_S)]


def test_only_a_fragment_drawn_as_part_of_a_page_run_has_the_page_runs_mark(pauses: list) -> None:
    seen: list[str | None] = []

    @fragments.fragment(run_every=1.0)
    def live() -> None:
        seen.append(fragments.page_run_mark())

    with fragments.page_run() as first:
        assert fragments.page_run_mark() is None  # the page's own elements: never taken back
        live()
    live()  # the fragment's own run, after the page's
    with fragments.page_run() as second:
        live()
    assert seen == [first, None, second] and first != second
    assert fragments.page_run_mark() is None


def test_a_page_run_ended_by_st_rerun_or_st_stop_ends_its_mark(pauses: list) -> None:
    with pytest.raises(RuntimeError), fragments.page_run():
        raise RuntimeError("st.rerun and st.stop end a page run this way")
    seen: list[str | None] = []
    fragments.fragment()(lambda: seen.append(fragments.page_run_mark()))()
    assert seen == [None]


def test_every_fragment_of_the_pages_goes_through_dashboard_fragments() -> None:
    sources = [*ROOT.glob("pages/*.py"), *ROOT.glob("rdqn/dashboard/**/*.py"), ROOT / "app.py"]
    direct = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources
        if path.name != "fragments.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bst\.fragment\b", line)
    ]
    assert not direct, f"use rdqn.dashboard.fragments.fragment: {direct}"


def _delta(path: list[int], fragment_id: str, text: str) -> ForwardMsg:
    msg = ForwardMsg()
    msg.metadata.delta_path[:] = path
    msg.delta.fragment_id = fragment_id
    msg.delta.new_element.markdown.body = text
    return msg


def test_streamlit_still_takes_back_a_fragments_unsent_elements_but_not_its_cached_ones() -> None:
    """The Streamlit behaviour the pause is for. When this fails, Streamlit no longer splits a
    fragment's unsent messages this way, and `rdqn.dashboard.fragments` may go."""
    queue = ForwardMsgQueue()
    drawn = _delta([0, 5, 2, 1, 0, 0, 0], "live", "the chart drawn now")
    unchanged = _delta([0, 5, 2, 1, 0, 0, 1], "live", "the chart drawn before" * 1000)
    populate_hash_if_needed(unchanged)
    queue.enqueue(drawn)
    queue.enqueue(create_reference_msg(unchanged))  # the browser has it cached
    queue.clear(retain_lifecycle_msgs=True, fragment_ids_this_run=["live"])  # its next run
    left = queue.flush()
    assert [list(msg.metadata.delta_path) for msg in left] == [[0, 5, 2, 1, 0, 0, 1]]
    assert left[0].WhichOneof("type") == "ref_hash"  # a chart at index 1 of an empty box


def _a_fragment_in_an_app_test() -> None:
    from rdqn.dashboard.fragments import fragment

    fragment(run_every=1.0)(lambda: None)()


def test_an_app_test_has_no_browser_and_no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    slept: list[float] = []
    sleep = fragments.time.sleep  # the one time module: AppTest sleeps while it waits too

    def noted(seconds: float) -> None:
        slept.append(seconds)
        sleep(seconds)

    monkeypatch.setattr(fragments.time, "sleep", noted)
    at = AppTest.from_function(_a_fragment_in_an_app_test).run()
    assert not at.exception and fragments.SEND_PAUSE_S not in slept
