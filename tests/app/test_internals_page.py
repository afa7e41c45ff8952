"""AppTest of the Replay internals page: every chart has a line saying what to look for, the
metrics explain ESS, stale updates and the sampler check, and the check's p is the chart's."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from rdqn.dashboard.display import PROJECTOR_HEIGHT
from rdqn.dashboard.state import registry
from rdqn.presets import preset
from tests.run_helpers import wait_for

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def internals_after_a_run() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/live.py").run()
    at.button(key="live.start").click().run()
    handle = registry().get(at.session_state["live.run_id"])
    wait_for(
        lambda: (
            (snap := handle.snapshot()) is not None and snap.fit is not None and snap.updates > 50
        ),
        60,
        every=0.1,
    )
    handle.pause()
    at.switch_page("pages/internals.py").run()
    assert not at.exception
    return at


def test_every_chart_says_what_to_look_for_and_the_metrics_explain_themselves() -> None:
    at = internals_after_a_run()
    charts = at.get("plotly_chart")
    notices = [c.value for c in at.caption if c.value.startswith("**What to look for:**")]
    assert len(charts) == 11  # the memory explorer's two, and nine of the sampler's statistics
    assert len(notices) == 10  # the sampler check's explanation stands beside it instead
    assert any("What to look for" in m.value for m in at.markdown)
    metrics = {m.label: m for m in at.metric}
    assert "(Σw)²/Σw²" in metrics["ESS of last batch"].help
    assert "overwritten" in metrics["Stale priority updates"].help
    assert metrics["Sampler check"].value.startswith("p ")
    (expander,) = at.expander
    assert "effective sample size" in expander.markdown[0].value


def test_sampler_check_explains_why_a_chi_square_would_say_one() -> None:
    at = internals_after_a_run()
    text = " ".join(m.value for m in at.markdown)
    assert "stratified" in text and "p ≈ 1.000" in text


def test_a_rank_based_run_is_told_why_its_band_keeps_its_shape() -> None:
    config = preset("per-notebook").with_overrides({"replay.scheme": "rank"})
    handle = registry().start(config, owner="test-internals")
    try:
        wait_for(
            lambda: (snap := handle.snapshot()) is not None and snap.updates > 20, 60, every=0.1
        )
        handle.pause()
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        at.session_state["live.run_id"] = handle.id
        at.switch_page("pages/internals.py").run()
        assert not at.exception
        notices = [c.value for c in at.caption if c.value.startswith("**What to look for:**")]
        assert any("by rank alone" in text for text in notices)
        assert not any("band that widens" in text for text in notices)
    finally:
        registry().stop(handle.id)


def test_projector_mode_draws_the_charts_taller() -> None:
    at = internals_after_a_run()

    def heights() -> list[int]:
        return [
            json.loads(chart.proto.spec)["layout"]["height"] for chart in at.get("plotly_chart")
        ]

    plain = heights()
    assert plain and set(plain) == {380}
    at.session_state["app.projector"] = True
    at.run()
    assert not at.exception
    assert heights() == [round(PROJECTOR_HEIGHT * h) for h in plain]
