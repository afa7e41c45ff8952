"""AppTest of the "Sum tree" page: the demo tree, a stratified batch, repeated draws, bad edits."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from rdqn.dashboard.state import registry
from rdqn.dashboard.text import plain
from rdqn.presets import preset
from tests.run_helpers import wait_for

APP = Path(__file__).resolve().parents[2] / "app.py"
DEFAULT = [3.0, 0.5, 1.0, 0.2, 2.0, 0.8, 0.1, 1.5]


@pytest.fixture
def at() -> AppTest:
    """The whole app (private RDQN_HOME from conftest), switched to the Sum tree page."""
    app = AppTest.from_file(str(APP), default_timeout=30)
    app.run()
    assert not app.exception
    app.switch_page("pages/sum_tree.py")
    app.run()
    assert not app.exception
    return app


def frame_with(at: AppTest, column: str) -> pd.DataFrame:
    """The one rendered dataframe that has `column`."""
    frames = [f.value for f in at.dataframe if column in f.value.columns]
    assert len(frames) == 1, f"expected one table with {column!r}, got {len(frames)}"
    return frames[0]


def chart_specs(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def trace_names(at: AppTest) -> list[str]:
    return [trace.get("name", "") for spec in chart_specs(at) for trace in spec["data"]]


def test_defaults_render(at: AppTest) -> None:
    assert at.title[0].value == "Sum tree"
    assert not at.error
    table = frame_with(at, "probability")
    assert len(table) == 8
    masses = np.array(DEFAULT) ** 0.6
    np.testing.assert_allclose(table["probability"], masses / masses.sum())
    assert table["weight"].max() == pytest.approx(1.0)
    assert any(r"P(i) = p_i^\alpha / \sum_k p_k^\alpha" in m.value for m in at.markdown)
    assert any("Live training page" in box.value for box in at.info)
    assert [link.proto.page for link in at.page_link] == ["live"]
    assert not any(name.startswith("path to leaf") for name in trace_names(at))


def test_draw_a_batch_highlights_the_descent_paths(at: AppTest) -> None:
    assert at.session_state["tree.uniforms"] is None
    at.button(key="tree.draw").click().run()
    assert not at.exception
    uniforms = at.session_state["tree.uniforms"]
    assert len(uniforms) == at.slider(key="tree.batch").value == 4
    queries = frame_with(at, "path")
    assert len(queries) == 4
    for leaf, path in zip(queries["leaf"], queries["path"], strict=True):
        nodes = [int(j) for j in path.split(" → ")]
        assert nodes[0] == 1 and nodes[-1] == 8 + leaf
        assert all(child >> 1 == parent for parent, child in zip(nodes, nodes[1:], strict=False))
    # Each query lies in its own segment k * total / B .. (k + 1) * total / B.
    assert (queries["segment from"] <= queries["query"]).all()
    assert (queries["query"] < queries["segment to"]).all()
    assert sum(name.startswith("path to leaf") for name in trace_names(at)) == 4

    at.button(key="tree.draw").click().run()
    assert not np.array_equal(at.session_state["tree.uniforms"], uniforms)


def test_alpha_and_beta_sliders_change_the_table(at: AppTest) -> None:
    before = frame_with(at, "probability")["probability"].to_numpy()
    at.slider(key="tree.alpha").set_value(0.0).run()
    assert not at.exception
    after = frame_with(at, "probability")
    assert not np.allclose(before, after["probability"])
    np.testing.assert_allclose(after["probability"], [1 / 8] * 8)
    np.testing.assert_allclose(after["weight"], [1.0] * 8)

    at.slider(key="tree.alpha").set_value(1.0).run()
    at.slider(key="tree.beta").set_value(1.0).run()
    table = frame_with(at, "probability")
    np.testing.assert_allclose(table["probability"], np.array(DEFAULT) / sum(DEFAULT))
    # beta = 1: w_i = (N P(i))^-1 / max = p_min / p_i.
    np.testing.assert_allclose(table["weight"], 0.1 / np.array(DEFAULT))


def test_draw_100_batches_accumulates_counts(at: AppTest) -> None:
    at.slider(key="tree.batch").set_value(5).run()
    at.button(key="tree.draw_many").click().run()
    assert not at.exception
    tally = at.session_state["tree.tally"]
    assert tally.total == 5 * 100
    assert len(tally.counts) == 8
    at.button(key="tree.draw_many").click().run()
    assert at.session_state["tree.tally"].total == 2 * 5 * 100
    titles = [spec["layout"]["title"]["text"] for spec in chart_specs(at)]
    assert any(t.startswith("1,000 leaves drawn (200 batches of 5)") for t in titles), titles

    at.button(key="tree.clear").click().run()
    assert at.session_state["tree.tally"] is None
    assert at.session_state["tree.uniforms"] is None


def test_changed_masses_restart_the_histogram(at: AppTest) -> None:
    at.button(key="tree.draw_many").click().run()
    at.slider(key="tree.alpha").set_value(0.3).run()
    assert any("histogram restarts" in c.value for c in at.caption)
    at.button(key="tree.draw_many").click().run()
    assert at.session_state["tree.tally"].total == 4 * 100


def test_bad_priority_shows_an_error_and_keeps_the_last_valid_values(at: AppTest) -> None:
    at.session_state["tree.base"] = [3.0, 0.5, 1.0, -2.0, 2.0, None, 0.1, 1.5]
    at.run()
    assert not at.exception
    assert len(at.error) == 1
    errors = at.error[0].value
    assert plain("leaf 3 (-2.0)") in errors and plain("leaf 5 (an empty cell)") in errors
    assert at.session_state["tree.priorities"] == DEFAULT
    assert len(frame_with(at, "probability")) == 8

    at.session_state["tree.base"] = [0.0] * 8
    at.run()
    assert not at.exception
    assert plain("at least one priority must be > 0") in at.error[0].value


def test_leaf_count_randomize_and_reset(at: AppTest) -> None:
    at.selectbox(key="tree.leaves").set_value(16).run()
    assert not at.exception
    assert len(at.session_state["tree.priorities"]) == 16
    assert len(frame_with(at, "probability")) == 16

    at.button(key="tree.randomize").click().run()
    randomized = at.session_state["tree.priorities"]
    assert len(randomized) == 16 and randomized != (DEFAULT * 2)
    at.button(key="tree.draw").click().run()
    assert frame_with(at, "path")["path"].str.startswith("1 → ").all()

    at.button(key="tree.reset").click().run()
    assert at.session_state["tree.priorities"] == DEFAULT * 2


def test_live_run_tree_or_a_pointer_to_live_training(at: AppTest) -> None:
    at.session_state["live.run_id"] = "no-such-run"
    at.run()
    assert any("Live training page" in box.value for box in at.info)

    handle = registry().start(preset("per-notebook"), owner="test-sum-tree", paused=True)
    try:
        at.session_state["live.run_id"] = handle.id
        titles: list[str] = []

        def live_tree_shown() -> bool:
            at.run()
            titles[:] = [spec["layout"]["title"]["text"] for spec in chart_specs(at)]
            return any(title.startswith("Top of the live sum tree") for title in titles)

        wait_for(
            live_tree_shown,
            20,
            what=lambda: f"the live tree never appeared; charts: {titles}",
            every=0.2,
        )
        assert not at.exception
        assert not any("Live training page" in box.value for box in at.info)
    finally:
        registry().stop(handle.id)


def test_a_rank_based_live_run_is_said_to_keep_no_sum_tree(at: AppTest) -> None:
    config = preset("per-notebook").with_overrides({"replay.scheme": "rank"})
    handle = registry().start(config, owner="test-sum-tree", paused=True)
    try:
        at.session_state["live.run_id"] = handle.id
        boxes: list[str] = []

        def said() -> bool:
            at.run()
            boxes[:] = [box.value for box in at.info]
            return any("rank-based replay, which keeps no sum tree" in box for box in boxes)

        wait_for(
            said, 20, what=lambda: f"no word on the rank-based run; info boxes: {boxes}", every=0.2
        )
        assert not at.exception
        assert not any("No proportional run" in box for box in boxes)
    finally:
        registry().stop(handle.id)


def test_single_batches_count_in_the_histogram(at: AppTest) -> None:
    batch = at.slider(key="tree.batch").value
    for _ in range(3):
        at.button(key="tree.draw").click().run()
    assert not at.exception
    tally = at.session_state["tree.tally"]
    assert tally.total == 3 * batch
    heading = f"{3 * batch} leaves drawn (3 batches of {batch})"
    assert any(spec["layout"]["title"]["text"].startswith(heading) for spec in chart_specs(at))
    at.button(key="tree.draw_many").click().run()  # many batches add to the same counts
    assert at.session_state["tree.tally"].total == 3 * batch + 100 * batch


def test_settings_survive_a_visit_to_another_page(at: AppTest) -> None:
    at.slider(key="tree.alpha").set_value(0.3).run()
    at.selectbox(key="tree.leaves").set_value(12).run()
    at.button(key="tree.draw_many").click().run()
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/sum_tree.py").run()
    assert not at.exception
    assert at.slider(key="tree.alpha").value == 0.3
    assert at.selectbox(key="tree.leaves").value == 12
    assert len(frame_with(at, "probability")) == 12
    assert at.session_state["tree.tally"].total == 400
