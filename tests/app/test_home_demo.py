"""AppTest of Home's *Start demo*: it starts the `demo` preset, and the live page shows that run."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from rdqn.dashboard.params import DEMO_PRESET
from rdqn.dashboard.state import registry
from rdqn.presets import preset
from tests.run_helpers import wait_for

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_home_says_what_the_demo_runs() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    demo = preset(DEMO_PRESET)
    text = " ".join(block.value for block in at.markdown)
    for shown in (
        f"α = {demo.replay.alpha:g}",
        f"β₀ = {demo.replay.beta0:g}",
        f"reaches {demo.train.stop_at_return:g}",
    ):
        assert shown in text


def test_start_demo_trains_the_demo_preset_and_the_live_page_shows_it() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.button(key="home.demo").click().run()
    assert not at.exception
    handle = registry().get(at.session_state["live.run_id"])
    assert handle.config == preset(DEMO_PRESET)
    assert at.session_state["live.preset"] == DEMO_PRESET
    assert at.session_state["live.overrides"] == {}

    wait_for(lambda: (snap := handle.snapshot()) is not None and snap.episodes >= 1, 60)
    at.switch_page("pages/live.py").run()
    assert not at.exception
    status_line = at.get("progress")[0].proto.text
    assert f"run `{handle.id}`" in status_line
    metrics = {metric.label: metric.value for metric in at.metric}
    assert int(metrics["Episodes"].replace(",", "")) >= 1
    assert any(w.label == "Preset" and w.value == DEMO_PRESET for w in at.sidebar.selectbox)
    registry().stop(handle.id, owner=handle.owner)
