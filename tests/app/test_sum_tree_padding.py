"""AppTest of the Sum tree page's live tree: padding and not-yet-filled slots are marked and
explained, not shown as bare zeros."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from rdqn.dashboard.state import registry
from rdqn.figures.tree import EMPTY, PADDING
from rdqn.presets import preset
from tests.run_helpers import wait_for

APP = Path(__file__).resolve().parents[2] / "app.py"


def test_live_tree_marks_and_explains_padding_and_empty_slots() -> None:
    at = AppTest.from_file(str(APP), default_timeout=30)
    at.run()
    at.switch_page("pages/sum_tree.py").run()
    handle = registry().start(preset("per-notebook"), owner="test-sum-tree", paused=True)
    try:
        at.session_state["live.run_id"] = handle.id

        def live_tree() -> dict | None:
            at.run()
            specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
            return next(
                (s for s in specs if s["layout"]["title"]["text"].startswith("Top of the live")),
                None,
            )

        live = wait_for(live_tree, 20, what="the live tree never appeared", every=0.2)
        assert not at.exception
        names = {trace.get("name") for trace in live["data"]}
        assert {PADDING, EMPTY} <= names  # capacity 10,000 of 16,384 leaves, nothing stored yet
        caption = " ".join(c.value for c in at.caption)
        assert "16,384 leaves" in caption and "6,384 padding leaves" in caption
        assert "not filled yet (0 of 10,000" in caption
    finally:
        registry().stop(handle.id)
