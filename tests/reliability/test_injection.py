"""No user-supplied text is rendered as Markdown or HTML.

Reproduced on the old main: ``/live?preset=[Click here](https://evil.example/login)`` showed a
live link in the page's URL note, and ``![t](http://host/x.png)`` fetched the image; a run's name,
preset, environment or error did the same on Saved runs. Every URL parameter of every page and
every stored text field of a run is tried here with a payload of links, images, HTML, bare
addresses and Streamlit directives; no element may render any of them (`rdqn.dashboard.text.plain`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rdqn.dashboard.params import URL_ALIASES
from rdqn.dashboard.state import registry
from rdqn.dashboard.text import plain
from rdqn.presets import preset
from rdqn.runs.store import RunStore
from tests.app.conftest import isolated_app  # noqa: F401 - autouse: private RDQN_HOME
from tests.run_helpers import tiny

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAYLOAD = (
    "[Click here to log in](https://evil.example/login) ![t](http://host.example/x.png) "
    '<img src="http://host.example/y.png"> <a href="https://evil.example">a</a> '
    "www.evil.example admin@evil.example :red[red] :material/skull: **bold** $x^2$"
)
MARKUP = (
    "](",
    "![",
    "<img",
    "<a ",
    "://",
    "www.",
    "@evil",
    ":red[",
    ":material/skull",
    "**bold",
    "$x",
)
"""What the payload would draw if rendered: a link, an image, HTML, an autolink, a directive,
emphasis, math."""
SAFE_ELEMENTS = {"code", "json", "arrow_data_frame", "plotly_chart", "imgs", "html", "iframe"}
"""Elements that show text literally (or are ours alone: the page's CSS)."""


def markup_in(text: str) -> list[str]:
    """The Markdown/HTML constructs ``text`` would render: escaped characters are text, so
    they are dropped first, and a zero-width space keeps an address from being linked."""
    bare = re.sub(r"\\.", "", text, flags=re.S)
    return [construct for construct in MARKUP if construct in bare]


def texts(at: AppTest) -> Iterator[str]:
    """Every string of every element on the page that Streamlit renders as Markdown."""

    def strings(message: Any) -> Iterator[str]:
        for _, value in message.ListFields():
            values = (
                value if isinstance(value, (list, tuple)) or hasattr(value, "extend") else [value]
            )
            for item in values:
                if isinstance(item, str):
                    yield item
                elif hasattr(item, "ListFields"):
                    yield from strings(item)

    def walk(node: Any) -> Iterator[str]:
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            for child in children.values():
                yield from walk(child)
        if getattr(node, "type", None) not in SAFE_ELEMENTS and hasattr(node, "proto"):
            proto = node.proto
            if proto is not None and hasattr(proto, "ListFields"):
                yield from strings(proto)

    yield from walk(at._tree)


def assert_inert(at: AppTest, *, echoed: bool) -> None:
    assert not at.exception, at.exception
    shown = list(texts(at))
    for text in shown:
        assert not markup_in(text), (markup_in(text), text)
    assert any("evil.example" in text for text in shown) == echoed


@pytest.mark.parametrize(
    "text",
    [
        PAYLOAD,
        "1. a list\n2) another\n# heading\n> quote\n| a | b |\n---\n===",
        "back\\slash \\[ `code` ~~strike~~ _under_ &lt;entity&gt; <script>x</script>",
        "HTTPS://EVIL.EXAMPLE WWW.EVIL.EXAMPLE mailto:me@evil.example xmpp:me@evil.example",
    ],
)
def test_plain_text_renders_nothing_and_reads_as_written(text: str) -> None:
    escaped = plain(text)
    assert not markup_in(escaped) and "<" not in re.sub(r"\\.", "", escaped)
    assert re.sub(r"\\(.)", r"\1", escaped, flags=re.S).replace("\u200b", "") == text


def test_plain_keeps_ordinary_text_readable() -> None:
    assert (
        plain("proportional · α 0.6 · β₀ 0.4 · seed 0") == "proportional · α 0.6 · β₀ 0.4 · seed 0"
    )
    assert plain(ValueError("got 7.0")) == "got 7.0"


def open_page(page: str, query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query)
    at.run()
    at.switch_page(page).run()
    return at


LIVE_PARAMS = ["preset", *URL_ALIASES, "lesson", "run", "follow"]


def test_live_page_url_parameters_are_shown_as_text() -> None:
    """Every parameter of the live page at once (one page load): each is noted, as text."""
    at = open_page("pages/live.py", dict.fromkeys(LIVE_PARAMS, PAYLOAD))
    assert_inert(at, echoed=True)
    notes = [text for text in texts(at) if text.startswith("URL note")]
    for name in LIVE_PARAMS:
        assert any(f"ignored {plain(name)}\\=" in note for note in notes), name


def test_other_pages_url_parameters_are_ignored() -> None:
    at = open_page("pages/live.py", {"projector": PAYLOAD})
    assert_inert(at, echoed=False)
    for page, name in [
        ("pages/compare.py", "group"),
        ("pages/internals.py", "run"),
        ("pages/runs.py", "run"),
        ("pages/home.py", "preset"),
    ]:
        at.query_params[name] = PAYLOAD
        at.switch_page(page).run()
        assert_inert(at, echoed=False)


@pytest.fixture
def tainted(tmp_path: Path) -> tuple[str, str]:
    """A stored failed run whose every text field is the payload (the command line takes a
    run's name as given; older stores, other tools), in comparison group ``tainted1``."""
    config = preset("per-notebook").to_dict()
    config["replay"]["scheme"] = PAYLOAD
    with RunStore(tmp_path / "rdqn.db") as store:
        run_id = store.create_run(
            config=config,
            name=PAYLOAD,
            preset=PAYLOAD,
            env_id=PAYLOAD,
            scheme="uniform",
            seed=0,
            group_id="tainted1",
        )
        store.set_status(run_id, "failed", PAYLOAD)
    return run_id, "tainted1"


def test_saved_runs_show_a_runs_stored_text_as_text(tainted: tuple[str, str]) -> None:
    at = open_page("pages/runs.py", {})
    at.session_state[at.dataframe[0].key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert at.session_state["runs.selected"] == [tainted[0]]
    assert_inert(at, echoed=True)


def test_compare_shows_a_groups_stored_text_as_text(tainted: tuple[str, str]) -> None:
    assert_inert(open_page("pages/compare.py", {"group": tainted[1]}), echoed=True)


def test_the_live_page_shows_a_stored_runs_text_as_text(tainted: tuple[str, str]) -> None:
    at = open_page("pages/live.py", {"run": tainted[0]})
    assert_inert(at, echoed=False)  # the run's status, from the store
    assert any("failed" in text for text in texts(at))


def test_the_live_page_shows_a_runs_error_as_text() -> None:
    at = open_page("pages/live.py", {})
    handle = registry().start(tiny(200), paused=True)
    handle.stop()
    handle._status, handle._error = "failed", PAYLOAD  # a run that failed with this message
    at.session_state["live.run_id"] = handle.id
    at.run()
    assert_inert(at, echoed=True)
