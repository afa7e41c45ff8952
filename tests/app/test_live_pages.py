"""AppTest of the home, live-training and replay-internals pages with a tiny, fast run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from streamlit import config
from streamlit.runtime.caching.cache_resource_api import _resource_caches
from streamlit.testing.v1 import AppTest

from rdqn.config import config_field
from rdqn.dashboard import control_sync, state
from rdqn.dashboard.classroom import sessions as browser_sessions
from rdqn.dashboard.config_widgets import FORM_FIELDS, field_label
from rdqn.dashboard.control_sync import RESTARTS, SETTLE_SECONDS
from rdqn.dashboard.live_run import STEP_AFTER_THE_END, STEPPED_AFTER_THE_END
from rdqn.dashboard.params import URL_ALIASES
from rdqn.dashboard.share import CLASS_CODE
from rdqn.dashboard.state import checked_token, live_pages, owner_for, registry
from rdqn.dashboard.text import plain
from rdqn.presets import preset
from tests.run_helpers import ShiftedTime, wait_for

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def wait_for_steps(at: AppTest, steps: int, timeout: float = 60.0) -> None:
    handle = registry().get(at.session_state["live.run_id"])
    wait_for(
        lambda: (snap := handle.snapshot()) is not None and snap.env_steps >= steps,
        timeout,
        what=lambda: f"the run did not reach {steps:,} steps: {handle.snapshot()}",
        every=0.1,
    )


def settling_clock(monkeypatch: pytest.MonkeyPatch) -> ShiftedTime:
    """The live page's clock, which the test moves past a slider's settle time."""
    clock = ShiftedTime()
    monkeypatch.setattr(control_sync, "time", clock)
    return clock


def open_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    return at


def test_home_renders_formulas_and_start_demo_launches_a_run() -> None:
    at = open_app()
    assert any("P(i)" in latex.value for latex in at.latex)
    at.button(key="home.demo").click().run()
    assert not at.exception
    run_id = at.session_state["live.run_id"]
    assert run_id and registry().get(run_id).expected_status in ("running", "paused", "finished")


def test_every_live_control_has_the_value_it_shows_as_its_default() -> None:
    """A page run reaches the browser before a lazily mounted widget has mounted: the widget is
    built from that run's description, where only the default says what to show, and sends it
    back as a change. With Streamlit's defaults the demo's controls became α 0, β₀ 0, uniform,
    1 step/s a second after Start demo (a browser read that in half the tries)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"preset": "demo"})
    at.run()
    at.switch_page("pages/live.py").run()
    at.button(key="live.start").click().run()
    at.run()  # a run that sets no control: each widget's value is only in its default now
    assert not at.exception
    sliders = {key: at.slider(key=key) for key in ("live.alpha", "live.beta", "live.smoothing")}
    assert {key: s.value for key, s in sliders.items()} == {
        "live.alpha": 0.6,
        "live.beta": 0.4,
        "live.smoothing": 0.9,
    }
    for key, slider in sliders.items():
        assert list(slider.proto.default) == [slider.value], key
    scheme = at.selectbox(key="live.scheme")
    assert scheme.value == "proportional"
    assert scheme.options[scheme.proto.default] == "proportional"
    speed = at.select_slider(key="live.speed")
    assert speed.value == "full speed"
    assert [speed.options[int(i)] for i in speed.proto.default] == ["full speed"]


def test_live_page_counters_curves_and_alpha_restart(monkeypatch: pytest.MonkeyPatch) -> None:
    # Three slider values within the settle time: on a loaded machine one AppTest run can take
    # longer than the 0.8 s a hand on the arrow keys gets, so the test gets 3 s.
    settle = 3.0
    monkeypatch.setattr(control_sync, "SETTLE_SECONDS", settle)
    clock = settling_clock(monkeypatch)
    at = open_app()
    at.switch_page("pages/live.py").run()
    assert not at.exception
    assert "Press **Start**" in at.info[0].value
    at.button(key="live.start").click().run()
    first = at.session_state["live.run_id"]
    assert first
    wait_for_steps(at, 300)
    at.run()
    assert not at.exception
    assert [m.label for m in at.metric][:3] == ["Env steps", "Updates", "Episodes"]
    assert int(at.metric[0].value.replace(",", "")) >= 300

    for value in (0.7, 0.8, 0.9):  # arrow keys: three values in quick succession
        at.slider(key="live.alpha").set_value(value).run()
        assert at.session_state["live.run_id"] == first, "no restart before the value settles"
    assert "once the slider settles" in " ".join(c.value for c in at.caption)
    clock.skip(settle)
    at.run()
    assert not at.exception
    second = at.session_state["live.run_id"]
    assert second != first, "moving alpha must restart the run"
    owner = registry().get(second).owner
    assert live_pages().previous_run(owner) == first, "one restart, from the first run"
    assert registry().get(second).config.replay.alpha == 0.9
    assert registry().get(second).config.seed == registry().get(first).config.seed
    assert at.query_params["alpha"] == "0.9"


def test_pause_step_and_reset_buttons() -> None:
    at = open_app()
    at.switch_page("pages/live.py").run()
    at.button(key="live.step").click().run()
    handle = registry().get(at.session_state["live.run_id"])
    wait_for(lambda: (snap := handle.snapshot()) is not None and snap.env_steps >= 1, 30)
    assert handle.status == "paused" and handle.snapshot().env_steps == 1
    at.run()  # the status line says why nothing learns yet (per-notebook: 1,000 warm-up steps)
    assert "filling the memory: learning starts after 1,000 steps" in progress_text(at)
    at.button(key="live.reset").click().run()
    assert at.session_state["live.run_id"] != handle.id
    assert not at.exception


def _start_twice() -> None:
    import streamlit as st

    from rdqn.dashboard.live_run import toggle_training
    from rdqn.dashboard.state import init_state, session

    init_state()
    session()
    toggle_training()
    st.session_state["first"] = st.session_state["live.run_id"]
    toggle_training()  # the same click once more, as a replayed trigger delivers it


def test_a_start_click_replayed_into_a_later_rerun_starts_no_second_run() -> None:
    """Streamlit keeps a button's trigger for the next rerun when a rerun interrupts the one
    that took the click (the live view reruns every second); Start is disabled while the run
    trains or waits, so a Start that arrives then must leave that run alone, not replace it."""
    at = AppTest.from_function(_start_twice, default_timeout=60)
    at.run()
    assert not at.exception
    first = at.session_state["first"]
    assert at.session_state["live.run_id"] == first
    handle = registry().get(first)
    assert handle.status in ("created", "running")
    registry().stop(first, owner=handle.owner)


def test_url_parameters_set_up_the_page_and_bad_ones_are_noted() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"alpha": "0.3", "beta": "7", "scheme": "rank", "seed": "x"})
    at.run()
    at.switch_page("pages/live.py").run()
    assert not at.exception
    assert at.session_state["live.preset"] == "per-notebook"
    assert at.session_state["live.overrides"] == {"replay.alpha": 0.3, "replay.scheme": "rank"}
    notes = " ".join(info.value for info in at.info)
    assert plain("beta='7': replay.beta0 must be in [0, 1], got 7.0") in notes
    assert plain("seed='x': seed must be an integer from 0 to 2,147,483,647, got 'x'") in notes
    assert at.query_params["alpha"] == "0.3" and "beta" not in at.query_params


def test_the_beta_counter_is_a_dash_for_uniform_replay() -> None:
    """β means nothing where every memory is drawn alike; prioritized runs show it."""
    shown = {}
    for scheme in ("uniform", "rank"):
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["scheme"] = scheme
        at.run()
        at.switch_page("pages/live.py").run()
        at.button(key="live.start").click().run()
        wait_for_steps(at, 1)
        at.run()
        shown[scheme] = next(m.value for m in at.metric if m.label == "β")
        handle = registry().get(at.session_state["live.run_id"])
        registry().stop(handle.id, owner=handle.owner)
    assert shown["uniform"] == "–"
    assert float(shown["rank"]) == pytest.approx(0.4, abs=0.1)  # β₀ = 0.4, annealing to 1


def test_lesson_hides_all_but_its_controls() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lesson"] = "alpha"
    at.run()
    at.switch_page("pages/live.py").run()
    assert not at.exception
    assert [s.key for s in at.slider if s.key in ("live.alpha", "live.beta")] == ["live.alpha"]
    assert not at.selectbox  # no scheme select, no sidebar settings


def test_internals_page_without_and_with_a_run() -> None:
    at = open_app()
    at.switch_page("pages/internals.py").run()
    assert not at.exception
    assert "No run yet" in at.info[0].value
    at.switch_page("pages/live.py").run()
    at.button(key="live.start").click().run()
    wait_for_steps(at, 1_200)
    at.switch_page("pages/internals.py").run()
    assert not at.exception
    assert len(at.get("plotly_chart")) >= 9


def labelled(widgets, label: str):  # noqa: ANN001, ANN201
    (widget,) = [w for w in widgets if w.label == label]
    return widget


def sidebar_widgets(at: AppTest) -> list:  # noqa: ANN201
    kinds = ("selectbox", "number_input", "slider", "checkbox", "radio")
    return [w for kind in kinds for w in getattr(at.sidebar, kind)]


def test_every_settings_field_is_a_config_field_with_its_doc_as_help() -> None:
    at = open_app()
    at.switch_page("pages/live.py").run()
    by_label = {field_label(path): path for path in ("preset", *FORM_FIELDS)}
    shown = {}
    for widget in sidebar_widgets(at):
        if widget.label == "Load the preset's own defaults":
            continue
        path = by_label[widget.label]  # every widget of the form is a config field
        assert widget.help == config_field(path).metadata["doc"], path
        shown[path] = widget.value
    assert set(shown) == {"preset", *FORM_FIELDS}
    defaults = preset("per-notebook")
    assert shown == {"preset": "per-notebook"} | {p: defaults.get(p) for p in FORM_FIELDS}
    for alias in ("alpha", "beta", "scheme"):
        widget = (
            at.slider(key=f"live.{alias}") if alias != "scheme" else at.selectbox(key="live.scheme")
        )
        doc = config_field(URL_ALIASES[alias]).metadata["doc"]
        assert widget.help == f"{doc} {RESTARTS}"  # moving it replaces the run on screen


def test_applying_the_settings_form_restarts_with_them_and_defaults_undo_it() -> None:
    at = open_app()
    at.switch_page("pages/live.py").run()
    labelled(at.sidebar.number_input, "Capacity").set_value(20_000)
    labelled(at.sidebar.selectbox, "Target network").set_value("soft")
    at.sidebar.button[0].click()  # the form's submit button
    at.run()
    assert not at.exception
    assert at.session_state["live.overrides"] == {
        "replay.capacity": 20_000,
        "agent.target_update": "soft",
    }
    config = registry().get(at.session_state["live.run_id"]).config
    assert (config.replay.capacity, config.agent.target_update) == (20_000, "soft")
    assert at.query_params["capacity"] == "20000" and at.query_params["target"] == "soft"

    at.sidebar.button(key="live.defaults").click().run()
    assert at.session_state["live.overrides"] == {}
    assert "capacity" not in at.query_params and at.query_params["preset"] == "per-notebook"


def test_a_recurrent_preset_s_form_sets_sequence_replay() -> None:
    """The recurrent replay fields show for a recurrent network (not for per-notebook's MLP),
    and R2D2's sequences set there are the run's and travel in the URL."""
    at = open_app()
    at.switch_page("pages/live.py").run()
    assert "Replay mode" not in [w.label for w in sidebar_widgets(at)]
    labelled(at.sidebar.selectbox, "Preset").set_value("e14-lesson")
    at.sidebar.button[0].click()
    at.run()
    labelled(at.sidebar.selectbox, "Replay mode").set_value("sequences")
    for label, value in (("Sequence length", 16), ("Sequence overlap", 8), ("Burn-in", 8)):
        labelled(at.sidebar.number_input, label).set_value(value)
    at.sidebar.button[0].click()
    at.run()
    assert not at.exception and not at.error
    replay = registry().get(at.session_state["live.run_id"]).config.replay
    assert (replay.mode, replay.sequence_length, replay.sequence_overlap, replay.burn_in) == (
        "sequences",
        16,
        8,
        8,
    )
    assert at.query_params["mode"] == "sequences" and at.query_params["seq"] == "16"


def test_conflicting_settings_show_an_error_and_change_nothing() -> None:
    at = open_app()
    at.switch_page("pages/live.py").run()
    labelled(at.sidebar.number_input, "Batch size").set_value(1024)
    at.sidebar.button[0].click()
    at.run()
    assert not at.exception
    assert plain("train.learning_starts must be >= replay.batch_size (1024)") in at.error[0].value
    assert at.session_state["live.overrides"] == {}


def test_switching_preset_keeps_only_what_was_changed() -> None:
    at = open_app()
    at.switch_page("pages/live.py").run()
    at.slider(key="live.alpha").set_value(0.8).run()
    labelled(at.sidebar.selectbox, "Preset").set_value("e14")
    labelled(at.sidebar.number_input, "Seed").set_value(3)
    at.sidebar.button[0].click()
    at.run()
    assert not at.exception
    assert at.session_state["live.preset"] == "e14"
    assert at.session_state["live.overrides"] == {"replay.alpha": 0.8, "seed": 3}
    config = registry().get(at.session_state["live.run_id"]).config
    assert (config.env.id, config.replay.window, config.agent.network) == (
        "rdqn/MaskedCartPole-v0",
        8,
        "recurrent",
    )


def test_a_prices_csv_the_market_cannot_use_is_rejected_and_not_kept(tmp_path: Path) -> None:
    from rdqn.dashboard import settings_apply

    with pytest.raises(ValueError, match="prices CSV 'short.csv' rejected: .*an episode needs"):
        settings_apply._checked_upload("short.csv", b"price\n1.0\n1.1\n1.2\n")
    assert not (tmp_path / "uploads").exists()  # nothing written
    prices = "price\n" + "\n".join(str(100 + k % 7) for k in range(600)) + "\n"
    kept = settings_apply._checked_upload("my prices.csv", prices.encode())
    assert kept.parent == tmp_path / "uploads" and kept.read_text() == prices
    assert kept.name.endswith("-my_prices.csv")


def test_at_the_cap_a_start_waits_in_the_queue_and_starts_when_a_slot_frees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RDQN_MAX_RUNS", "1")
    teacher, student = open_app(), open_app()
    teacher.switch_page("pages/live.py").run()
    teacher.button(key="live.start").click().run()
    student.switch_page("pages/live.py").run()
    student.button(key="live.start").click().run()
    assert not student.exception
    waiting = " ".join(box.value for box in student.info)
    assert "waits in the queue, place 1 of 1, and starts by itself" in waiting
    mine = registry().get(student.session_state["live.run_id"])
    assert mine.status == "created"
    assert student.button(key="live.start").disabled  # pressing again would lose its place
    registry().stop(teacher.session_state["live.run_id"])
    wait_for(lambda: mine.status != "created", 30)
    assert mine.status == "running"


def test_a_run_nobody_watches_says_so_and_goes_on_where_it_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(That no run of a session is idle while any of its pages is open needs a browser: the
    page heartbeat runs in app.py, which AppTest runs only once. tests/e2e walks it.)"""
    monkeypatch.setenv("RDQN_IDLE_TIMEOUT", "2")
    at = open_app()
    at.switch_page("pages/live.py").run()
    at.button(key="live.start").click().run()
    handle = registry().get(at.session_state["live.run_id"])
    assert handle.join(15)
    assert (handle.status, handle.error) == ("stopped", "stopped: nobody watched this run for 2 s")
    at.run()
    assert "nobody watched this run for 2 s" in at.warning[0].value
    assert "Press **Resume** to go on where it stopped" in at.warning[0].value
    assert at.button(key="live.start").label == "Resume"
    assert not at.button(key="live.start").disabled and at.button(key="live.pause").disabled
    stopped_at = handle.snapshot().env_steps
    at.button(key="live.start").click().run()
    assert not at.exception
    again = registry().get(at.session_state["live.run_id"])
    assert again.id == handle.id and again is not handle  # the same run, a new worker
    assert again.status in ("created", "running")
    wait_for_steps(at, stopped_at + 1)


def test_a_lesson_lasts_the_session_until_left() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lesson"] = "alpha"
    at.run()
    at.switch_page("pages/live.py").run()
    assert [s.key for s in at.slider if s.key in ("live.alpha", "live.beta")] == ["live.alpha"]
    del at.query_params["lesson"]  # another page's link carries no lesson
    at.switch_page("pages/sum_tree.py").run()
    at.switch_page("pages/live.py").run()
    assert not at.exception
    assert [s.key for s in at.slider if s.key in ("live.alpha", "live.beta")] == ["live.alpha"]
    assert at.query_params["lesson"] == "alpha"
    at.button(key="live.leave_lesson").click().run()
    assert {"live.alpha", "live.beta"} <= {s.key for s in at.slider}
    assert "lesson" not in at.query_params


def progress_text(at: AppTest) -> str:
    """The live view's status line, in lower case: "running · run `…`", or while the kernels
    load on a busy machine, "Preparing fast kernels: … Run `…` starts after."."""

    def shown() -> list[Any]:
        if not at.get("progress"):
            at.run()
        return at.get("progress")

    return wait_for(shown, 30, what="no status line", every=0.2)[0].proto.text.lower()


def test_the_share_panel_shows_the_class_code_and_warns_when_students_cannot_reach_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The code big enough for the back row; links a student's laptop cannot open (the server
    listens on loopback only, or the machine has no network address) are called so."""

    def share_texts() -> tuple[str, str]:
        at = open_app()
        at.switch_page("pages/live.py").run()
        assert not at.exception
        markdown = " ".join(m.value for m in at.markdown)
        return markdown, " ".join(w.value for w in at.warning)

    monkeypatch.setattr("rdqn.dashboard.live_view.net_util.get_internal_ip", lambda: "192.168.1.20")
    markdown, warnings = share_texts()
    shown = re.search(r"### Class code `(\w+)`", markdown)
    assert shown is not None and CLASS_CODE.match(shown.group(1)), markdown
    assert "work on this computer only" not in warnings  # the machine's address: reachable

    monkeypatch.setattr("rdqn.dashboard.live_view.net_util.get_internal_ip", lambda: None)
    assert "no network address was found for this machine" in share_texts()[1]

    try:
        config.set_option("server.address", "127.0.0.1")
        assert "the server listens on 127.0.0.1 only" in share_texts()[1]
        monkeypatch.setattr("rdqn.dashboard.live_view.net_util.get_internal_ip", lambda: "10.0.0.7")
        config.set_option("server.address", "0.0.0.0")  # every interface, said explicitly
        assert "work on this computer only" not in share_texts()[1]
    finally:
        config.set_option("server.address", None)


def test_students_follow_the_teachers_current_run_and_can_fork_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = settling_clock(monkeypatch)
    teacher = open_app()
    teacher.switch_page("pages/live.py").run()
    teacher.button(key="live.start").click().run()
    first = teacher.session_state["live.run_id"]
    code = live_pages().class_code(registry().get(first).owner)

    student = AppTest.from_file(APP, default_timeout=60)
    student.query_params["follow"] = code
    student.run()
    student.switch_page("pages/live.py").run()
    assert not student.exception
    assert f"Following class `{code}`" in student.caption[0].value
    assert not [s for s in student.slider if s.key == "live.alpha"]  # read-only
    assert f"run `{first}`" in progress_text(student)

    teacher.slider(key="live.alpha").set_value(0.9).run()  # a restart: a new run
    clock.skip(SETTLE_SECONDS)
    teacher.run()
    second = teacher.session_state["live.run_id"]
    assert second != first
    student.run()
    assert f"run `{second}`" in progress_text(student)  # the student follows

    student.button(key="live.fork").click().run()
    assert not student.exception
    mine = registry().get(student.session_state["live.run_id"])
    assert mine is not None and mine.id not in (first, second)
    assert mine.config == registry().get(second).config  # the teacher's setup, its own run
    assert "follow" not in student.query_params and student.query_params["alpha"] == "0.9"


def test_a_run_this_server_does_not_have_offers_no_setup_to_copy() -> None:
    """A mistyped or deleted run's link: the page warns that there is no such run and the fork
    button is off; a run deleted after the page showed it gets a toast on the click, not an
    error page."""
    student = AppTest.from_file(APP, default_timeout=60)
    student.query_params["run"] = "deadbeef0000"
    student.run()
    student.switch_page("pages/live.py").run()
    assert not student.exception
    assert "No run with id 'deadbeef0000'" in student.warning[0].value
    assert student.button(key="live.fork").disabled

    run_store = state.store()
    config = preset("chain-lesson").to_dict()
    run_id = run_store.create_run(
        config=config, env_id="rdqn/SparseChain-v0", scheme="rank", seed=0
    )
    run_store.set_status(run_id, "stopped", "stopped: by the user")
    watcher = AppTest.from_file(APP, default_timeout=60)
    watcher.query_params["run"] = run_id
    watcher.run()
    watcher.switch_page("pages/live.py").run()
    assert not watcher.button(key="live.fork").disabled
    run_store.delete_run(run_id)
    watcher.button(key="live.fork").click().run()
    assert not watcher.exception
    assert [toast.value for toast in watcher.toast] == [
        f"Run {run_id} is no longer on this server: there is no setup to copy."
    ]


def test_following_an_unknown_class_says_so() -> None:
    student = AppTest.from_file(APP, default_timeout=60)
    student.query_params["follow"] = "ZZZZ"
    student.run()
    student.switch_page("pages/live.py").run()
    assert "No class `ZZZZ` on this server" in student.warning[0].value


def _lesson_line(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Lesson:"))


def test_a_late_page_refresh_with_the_old_scheme_does_not_replace_the_steps_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression (seen in 6 of 6 browser transitions): a page refresh the browser
    sent before its controls took a lesson step's values carried the old scheme, and the run
    the step had started was replaced by one with the old scheme within a second. Such an echo
    is undone; a person who picks the old value again later still restarts."""
    at = open_app()
    at.query_params["lesson"] = "schemes"
    at.switch_page("pages/live.py").run()
    at.button(key="live.start").click().run()
    at.button(key="live.lesson_next").click().run()  # step 2: proportional
    step_run = at.session_state["live.run_id"]
    assert registry().get(step_run).config.replay.scheme == "proportional"
    assert at.selectbox(key="live.scheme").value == "proportional"
    at.selectbox(key="live.scheme").set_value("uniform").run()  # the browser's late refresh
    assert not at.exception
    assert at.session_state["live.run_id"] == step_run
    assert at.selectbox(key="live.scheme").value == "proportional"
    assert live_config_scheme(at) == "proportional"
    monkeypatch.setattr(control_sync, "ECHO_SECONDS", 0.0)  # later: a person's choice
    at.selectbox(key="live.scheme").set_value("uniform").run()
    assert at.session_state["live.run_id"] != step_run
    assert registry().get(at.session_state["live.run_id"]).config.replay.scheme == "uniform"


def live_config_scheme(at: AppTest) -> str:
    overrides = at.session_state["live.overrides"]
    return overrides.get("replay.scheme", "proportional")


def test_a_guided_lesson_sets_the_controls_and_its_runs_step_by_step() -> None:
    at = open_app()
    at.query_params["lesson"] = "alpha-beta"
    at.switch_page("pages/live.py").run()
    assert "step 1 of 5" in _lesson_line(at)
    assert [s.key for s in at.slider if s.key in ("live.alpha", "live.beta")] == ["live.alpha"]
    assert at.slider(key="live.alpha").value == 0.0
    assert at.button(key="live.lesson_back").disabled
    at.button(key="live.start").click().run()
    first = at.session_state["live.run_id"]
    assert registry().get(first).config.replay.alpha == 0.0
    assert registry().get(first).config.seed == 1  # the lesson's own settings

    at.button(key="live.lesson_next").click().run()  # step 2: a new run, α = 1
    second = at.session_state["live.run_id"]
    assert second != first and registry().get(second).config.replay.alpha == 1.0
    assert live_pages().previous_run(registry().get(second).owner) == first
    at.button(key="live.lesson_next").click().run()  # step 3: β = 0 throughout
    third = registry().get(at.session_state["live.run_id"]).config.replay
    wait_for(lambda: registry().get(second).status == "stopped", timeout=60)  # replaced
    assert (third.alpha, third.beta0, third.beta_end) == (1.0, 0.0, 0.0)
    at.button(key="live.lesson_next").click().run()  # step 4 restores step 2's run
    assert at.session_state["live.run_id"] == second
    # step 3 stopped it before the end of its budget: it goes on where it stopped
    wait_for(lambda: registry().get(second).status == "running", timeout=60)
    assert "step 4 of 5" in _lesson_line(at)
    at.button(key="live.lesson_back").click().run()  # back to step 3: its run again
    assert registry().get(at.session_state["live.run_id"]).config.replay == third
    for _ in range(2):
        at.button(key="live.lesson_next").click().run()
    assert at.button(key="live.lesson_next").disabled  # the last step
    assert {"live.alpha", "live.beta"} <= {s.key for s in at.slider}
    assert not at.exception
    for run in registry().runs():
        registry().stop(run.id, wait=False)


def test_a_run_waiting_for_the_kernel_warm_up_shows_its_progress(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rdqn.serve.worker import WarmUp

    def page() -> None:
        from rdqn.dashboard.live_view import _preparing

        _preparing("abc123")

    warm = WarmUp(done=2, total=6, compiling=True, part="uniform replay")
    monkeypatch.setattr(registry(), "warm_up_progress", lambda: warm)
    at = AppTest.from_function(page).run()
    progress = at.get("progress")[0].proto
    assert progress.value == round(100 * 2 / 6)
    assert progress.text == (
        "Preparing fast kernels (first start only: about a minute): compiling uniform replay, "
        "part 3 of 6. Run `abc123` starts after."
    )
    monkeypatch.setattr(registry(), "warm_up_progress", lambda: WarmUp(done=6, total=6))
    at.run()
    assert not at.get("progress") and "preparing to train" in at.info[0].value


# -- a reload keeps the browser's run: nothing lost -----------------------------------------------

TOKEN = "Tok3n_of-a-browser_0123A"  # what the rdqn_owner cookie holds: 24 URL-safe characters


class GraceTimers:
    """Stands in for the server's timer thread: the test says when the grace period ends."""

    def __init__(self) -> None:
        self.pending: list[Any] = []

    def __call__(self, _seconds: float, fn: Any) -> None:
        self.pending.append(fn)

    def end_grace(self) -> None:
        """Every timer, and those they set (the away window after the grace)."""
        while self.pending:
            self.fire_one()

    def fire_one(self) -> None:
        """The first timer only (the grace: the browser is away now)."""
        self.pending.pop(0)()


def close_session() -> None:
    """The tab goes away (or reloads): Streamlit releases the session's resources."""
    _resource_caches.clear_session("test session id")  # AppTest's one session id


def browser(monkeypatch: pytest.MonkeyPatch, token: str | None) -> None:
    """The next sessions come from a browser whose owner cookie is ``token`` (None: none)."""
    monkeypatch.setattr(state, "_browser_token", lambda: checked_token(token))


@pytest.fixture
def timers(monkeypatch: pytest.MonkeyPatch) -> GraceTimers:
    """The grace timers this test sets, fired when it says."""
    fake = GraceTimers()
    monkeypatch.setattr(browser_sessions, "LATER", fake)
    return fake


def start_on_live_page() -> tuple[AppTest, str]:
    at = open_app()
    at.switch_page("pages/live.py").run()
    at.button(key="live.start").click().run()
    assert not at.exception
    return at, at.session_state["live.run_id"]


def test_a_reload_shows_the_browsers_run_again_and_does_not_stop_it(
    monkeypatch: pytest.MonkeyPatch, timers: GraceTimers
) -> None:
    browser(monkeypatch, TOKEN)
    at, run_id = start_on_live_page()
    clock = settling_clock(monkeypatch)
    at.slider(key="live.alpha").set_value(0.3).run()  # a setting of the run, to come back
    clock.skip(SETTLE_SECONDS)
    at.run()
    assert at.session_state["live.run_id"] != run_id  # restarted with α = 0.3
    run_id = at.session_state["live.run_id"]
    close_session()  # the reload: the old session goes, a new one of the same browser comes
    again = open_app()
    again.switch_page("pages/live.py").run()
    timers.end_grace()
    assert not again.exception
    assert again.session_state["live.run_id"] == run_id
    assert again.slider(key="live.alpha").value == 0.3
    # Still the browser's, never asked to stop (a stop would have made it nobody's).
    assert registry().owner_of(run_id) == owner_for(TOKEN)
    assert live_pages().live_run(owner_for(TOKEN)) == run_id
    assert registry().get(run_id).status in ("created", "running")
    wait_for(lambda: registry().get(run_id).status == "running", timeout=60)
    again.run()  # its worker has reported it training: Pause is offered
    assert again.button(key="live.start").disabled and not again.button(key="live.pause").disabled


def test_a_reload_after_the_run_ended_shows_it_again(
    monkeypatch: pytest.MonkeyPatch, timers: GraceTimers
) -> None:
    """The demo has finished on the projector and its tab reloads: the page shows the finished
    run again, with its settings, counters and curves, as it did before the reload; Start
    begins anew, with the finished run as the dashed overlay. A link to other settings opens a
    page for those instead."""
    browser(monkeypatch, TOKEN)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["steps"] = "300"
    at.query_params["alpha"] = "0.3"
    at.run()
    at.switch_page("pages/live.py").run()
    at.button(key="live.start").click().run()
    run_id = at.session_state["live.run_id"]
    ended = registry().get(run_id)
    assert ended.join(timeout=60) and ended.status == "finished"
    address = dict(at.query_params)  # what the page wrote for its run: a reload keeps it

    def reopen(params: dict[str, str]) -> AppTest:
        close_session()
        page = AppTest.from_file(APP, default_timeout=60)
        page.query_params.update(params)
        page.run()
        page.switch_page("pages/live.py").run()
        assert not page.exception
        return page

    other = reopen({**address, "alpha": "0.8"})
    assert other.session_state["live.run_id"] is None
    assert other.slider(key="live.alpha").value == 0.8
    again = reopen(address)
    timers.end_grace()
    assert again.session_state["live.run_id"] == run_id
    assert again.slider(key="live.alpha").value == 0.3
    assert f"finished · run `{run_id}`" in again.get("progress")[0].proto.text
    assert int(again.metric[0].value.replace(",", "")) == 300
    start = again.button(key="live.start")
    assert start.label == "Start" and not start.disabled
    start.click().run()
    assert not again.exception
    new_id = again.session_state["live.run_id"]
    assert new_id != run_id and live_pages().previous_run(owner_for(TOKEN), new_id) == run_id


def test_start_demo_after_a_reload_replaces_the_browsers_run_instead_of_queueing(
    monkeypatch: pytest.MonkeyPatch, timers: GraceTimers
) -> None:
    """One training slot; the teacher reloads and presses Start demo on Home: the new run takes
    the old run's slot at once, not a place in the queue behind it for its grace period."""
    monkeypatch.setenv("RDQN_MAX_RUNS", "1")
    browser(monkeypatch, TOKEN)
    _, old_id = start_on_live_page()
    close_session()
    home = open_app()  # the reload lands on Home
    home.button(key="home.demo").click().run()
    assert not home.exception
    new_id = home.session_state["live.run_id"]
    assert new_id != old_id and registry().position(new_id) is None  # not queued
    old = registry().get(old_id)
    assert old.join(15)
    assert old.status == "stopped" and old.error.startswith(f"stopped: replaced by run {new_id}")
    assert live_pages().previous_run(owner_for(TOKEN), new_id) == old_id  # the dashed overlay
    timers.end_grace()  # the old session's grace ends: the new run is this browser's, kept
    assert registry().get(new_id).status in ("created", "running")


def test_a_closed_tab_still_stops_its_runs_after_the_grace_period(
    monkeypatch: pytest.MonkeyPatch, timers: GraceTimers
) -> None:
    browser(monkeypatch, TOKEN)
    _, run_id = start_on_live_page()
    close_session()
    assert registry().get(run_id).status in ("created", "running")  # within the grace period
    timers.end_grace()
    handle = registry().get(run_id)
    assert handle.join(15)
    assert (handle.status, handle.error) == ("stopped", "stopped: its browser tab was closed")


def test_a_closed_tab_pauses_its_runs_which_train_again_when_the_browser_is_back(
    monkeypatch: pytest.MonkeyPatch, timers: GraceTimers
) -> None:
    browser(monkeypatch, TOKEN)
    _, run_id = start_on_live_page()
    handle = registry().get(run_id)
    wait_for(lambda: handle.status == "running", 60)
    close_session()
    timers.fire_one()  # the grace has passed: the browser is away
    wait_for(lambda: handle.status == "paused", 30)
    back = open_app()  # the same browser, within the away window
    back.switch_page("pages/live.py").run()
    assert not back.exception
    wait_for(lambda: handle.status == "running", 30)
    assert back.session_state["live.run_id"] == run_id
    timers.end_grace()  # the away window of that absence ends: the run is its browser's again
    assert registry().get(run_id).status == "running"


def test_without_a_cookie_each_session_is_a_new_owner(
    monkeypatch: pytest.MonkeyPatch, timers: GraceTimers
) -> None:
    browser(monkeypatch, None)
    _, run_id = start_on_live_page()
    close_session()
    again = open_app()
    again.switch_page("pages/live.py").run()
    timers.end_grace()
    assert again.session_state["live.run_id"] is None  # another browser: not its run
    assert registry().get(run_id).join(15)
    assert registry().get(run_id).status == "stopped"


def test_the_resume_list_offers_only_this_browsers_stopped_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    other = "another_browser_token_xyz"[:24]
    config: dict[str, Any] = {}
    ids = {}
    run_store = state.store()
    for who in ("mine", "theirs", "cli"):
        run_id = run_store.create_run(config=config, env_id="CartPole-v1", scheme="rank", seed=0)
        owner = {"mine": owner_for(TOKEN), "theirs": owner_for(other), "cli": None}[who]
        run_store.set_owner_hash(run_id, owner)
        run_store.set_status(run_id, "stopped", "stopped: the server shut down")
        run_store.set_checkpoint(run_id, "x.pt", resume_env_steps=5)
        ids[who] = run_id
    for token, listed in ((TOKEN, {"mine"}), (other, {"theirs"}), (None, set())):
        browser(monkeypatch, token)
        _resource_caches.clear_session("test session id")
        at = open_app()
        at.switch_page("pages/live.py").run()
        assert not at.exception
        offered = {key.removeprefix("live.resume_") for key in button_keys(at)}
        assert offered == {ids[who] for who in listed}, token


def test_a_refused_resume_shows_a_student_no_server_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Resume of a run whose checkpoint is not one: one line, the run kept, and the checkpoint's
    folder on the server written as $RDQN_HOME for a student (the admin's page shows it whole)."""
    run_store = state.store()
    run_id = run_store.create_run(config={}, env_id="CartPole-v1", scheme="rank", seed=0)
    run_store.set_owner_hash(run_id, owner_for(TOKEN))
    run_store.set_status(run_id, "stopped", "stopped: the server shut down")
    checkpoint = run_store.checkpoint_dir / f"{run_id}.pt"
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    checkpoint.write_bytes(b"not a checkpoint")
    run_store.set_checkpoint(run_id, checkpoint, resume_env_steps=5)
    browser(monkeypatch, TOKEN)
    at = open_app()
    at.switch_page("pages/live.py").run()
    at.button(key=f"live.resume_{run_id}").click().run()
    assert not at.exception
    (shown,) = [e.value for e in at.error if run_id in e.value]
    assert "the run stays listed" in shown and plain("$RDQN_HOME/checkpoints/") in shown, shown
    assert str(run_store.checkpoint_dir.parent.resolve()) not in shown, shown
    assert run_store.get_run(run_id).status == "stopped"


def button_keys(at: AppTest) -> list[str]:
    return [b.key for b in at.button if b.key and b.key.startswith("live.resume_")]


@pytest.mark.parametrize(
    "cookie",
    [
        None,
        "",
        "short",
        TOKEN[:23],
        TOKEN + "A",
        TOKEN[:23] + ";",
        TOKEN[:23] + "=",
        TOKEN[:23] + " ",
        TOKEN[:23] + "é",
        TOKEN[:23] + "\n",
        TOKEN + "\n",
        "../../../../etc/passwd_xx",
        "<script>alert(1)</script>",
        b"Tok3n_of-a-browser_0123A",
        24,
    ],
)
def test_a_malformed_owner_cookie_is_never_used(cookie: object) -> None:
    assert checked_token(cookie) is None


def test_a_well_formed_owner_cookie_is_used_and_hashed() -> None:
    assert checked_token(TOKEN) == TOKEN
    assert TOKEN not in owner_for(TOKEN) and owner_for(TOKEN) == owner_for(TOKEN)
    assert owner_for(TOKEN) != owner_for(TOKEN[::-1])


def test_a_second_session_of_the_browser_forking_the_same_run_shows_the_first_fork() -> None:
    """One click can reach the server twice (two runs 8 ms apart were seen under load): the
    second fork of the same run by the same browser shows the first one's run, not a second
    run waiting in the queue with nobody to show it."""
    teacher = open_app()
    teacher.switch_page("pages/live.py").run()
    teacher.button(key="live.start").click().run()
    watched = teacher.session_state["live.run_id"]
    sessions = []
    for _ in range(2):  # AppTest instances in one process are sessions of one browser
        student = AppTest.from_file(APP, default_timeout=60)
        student.query_params["run"] = watched  # (following the class would follow the fork:
        student.run()  # the teacher's session is of the same browser here)
        student.switch_page("pages/live.py").run()
        sessions.append(student)
    before = {handle.id for handle in registry().runs()}
    for student in sessions:
        student.button(key="live.fork").click().run()
        assert not student.exception
    new = {handle.id for handle in registry().runs()} - before
    assert len(new) == 1, new
    assert [s.session_state["live.run_id"] for s in sessions] == [new.pop()] * 2


def test_step_on_an_ended_run_says_that_it_starts_a_new_one() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["steps"] = "300"
    at.run()
    at.switch_page("pages/live.py").run()
    assert at.button(key="live.step").help == "One env step, then pause"
    at.button(key="live.start").click().run()
    ended = registry().get(at.session_state["live.run_id"])
    assert ended.join(timeout=60) and ended.status == "finished"
    at.run()
    assert at.button(key="live.step").help == STEP_AFTER_THE_END
    at.button(key="live.step").click().run()
    assert not at.exception
    assert [toast.value for toast in at.toast] == [STEPPED_AFTER_THE_END]
    fresh = registry().get(at.session_state["live.run_id"])
    assert fresh.id != ended.id and fresh.config.seed == ended.config.seed
    wait_for_steps(at, 1)
    assert fresh.status == "paused" and fresh.snapshot().env_steps == 1
