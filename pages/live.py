"""Live training: settings, transport controls and the run's curves, refreshed every second."""

import numpy as np
import streamlit as st

from dashboard import figures
from dashboard.params import (
    LIVE_DEFAULTS,
    config_from_settings,
    parse_params,
    settings_for_preset,
    to_params,
)
from dashboard.state import (
    SPEEDS,
    current_run,
    ensure_app_frame,
    registry,
    save_upload,
    start_live_run,
    store,
)
from rdqn.config import SCHEMES
from rdqn.envs import ENV_IDS, load_prices_csv
from rdqn.presets import PRESETS

ensure_app_frame()

parsed = parse_params(st.query_params.to_dict())
settings: dict = st.session_state["live.settings"]
if not st.session_state["live.params_loaded"]:
    if "preset" in parsed.values:
        settings.update(settings_for_preset(parsed.values["preset"]))
    settings.update({k: v for k, v in parsed.values.items()})
    st.session_state["live.params_loaded"] = True
lesson = parsed.lesson
visible = set(lesson.controls) if lesson else {"alpha", "beta", "scheme", "settings"}

st.title("Live training")
for note in parsed.notes:
    st.info(f"URL note: {note}", icon=":material/link_off:")
if lesson:
    st.markdown(f"**Lesson: {lesson.title}.** {lesson.prompt}")


def restart(paused: bool | None = None) -> None:
    """Start a fresh run of the current settings from the same seed (paused like the old one,
    unless `paused` says otherwise)."""
    try:
        config = config_from_settings(settings, st.session_state.get("live.env_kwargs"))
    except ValueError as err:
        st.session_state["live.error"] = str(err)
        return
    st.session_state["live.error"] = None
    if paused is None:
        handle = current_run()
        paused = handle is not None and handle.status == "paused"
    start_live_run(config, paused=paused)


def on_main_control(name: str) -> None:
    settings[name] = st.session_state[f"live.{name}"]
    if current_run() is not None:
        restart()


# ---------------------------------------------------------------- watch mode (?run=<id>)
if parsed.run_id is not None:
    watched = registry().get(parsed.run_id)
    st.caption(f"Watching run `{parsed.run_id}` read-only.")
    if watched is None:
        try:
            record = store().get_run(parsed.run_id)
        except KeyError:
            st.warning(f"No run with id {parsed.run_id!r} on this server.")
            st.stop()
        episodes = store().episodes(parsed.run_id)
        st.markdown(f"Status **{record.status}** · {record.env_steps:,} env steps")
        st.plotly_chart(
            figures.reward_curve(
                episodes["env_steps"].to_numpy(),
                episodes["return"].to_numpy(),
                scheme=record.scheme,
            ),
            width="stretch",
        )
        st.stop()

# ---------------------------------------------------------------- controls
if parsed.run_id is None:
    top = st.columns([2, 2, 2])
    if "alpha" in visible:
        top[0].slider(
            "α (prioritization)",
            0.0,
            1.0,
            float(settings["alpha"]),
            0.05,
            key="live.alpha",
            on_change=on_main_control,
            args=("alpha",),
            help="0 = uniform replay, 1 = fully proportional to |TD error|",
        )
    if "beta" in visible:
        top[1].slider(
            "β₀ (IS correction at the start)",
            0.0,
            1.0,
            float(settings["beta"]),
            0.05,
            key="live.beta",
            on_change=on_main_control,
            args=("beta",),
            help="Annealed to 1 over training; 0 = no correction, 1 = full correction",
        )
    if "scheme" in visible:
        top[2].selectbox(
            "Replay scheme",
            SCHEMES,
            index=SCHEMES.index(settings["scheme"]),
            key="live.scheme",
            on_change=on_main_control,
            args=("scheme",),
        )

    buttons = st.columns([1, 1, 1, 1, 3])
    handle = current_run()
    running = handle is not None and handle.status == "running"
    if buttons[0].button(
        "Start" if handle is None else "Resume",
        icon=":material/play_arrow:",
        disabled=running,
        key="live.start",
        type="primary",
    ):
        if handle is None or handle.status not in ("running", "paused"):
            restart()
        else:
            handle.resume()
        st.rerun()
    if buttons[1].button("Pause", icon=":material/pause:", disabled=not running, key="live.pause"):
        handle.pause()
        st.rerun()
    if buttons[2].button(
        "Step",
        icon=":material/skip_next:",
        key="live.step",
        help="One environment step and its update, then pause",
    ):
        if handle is None or handle.status not in ("running", "paused"):
            restart(paused=True)
            handle = current_run()
        if handle is not None:
            handle.step_once()
    if buttons[3].button(
        "Reset",
        icon=":material/restart_alt:",
        key="live.reset",
        help="Restart from the same seed with the current settings",
    ):
        restart()
        st.rerun()
    speed = buttons[4].select_slider(
        "Speed",
        list(SPEEDS),
        key="live.speed",
        help="Slow down to watch single updates; full speed for real training",
    )
    if handle is not None and handle.speed != SPEEDS[speed]:
        handle.set_speed(SPEEDS[speed])

    if "settings" in visible:
        with st.sidebar.form("live.settings_form"):
            st.markdown("**Run settings**")
            preset_name = st.selectbox(
                "Preset", list(PRESETS), index=list(PRESETS).index(settings["preset"])
            )
            env_id = st.selectbox("Environment", ENV_IDS, index=ENV_IDS.index(settings["env"]))
            upload = st.file_uploader(
                "Prices CSV (SyntheticMarket only)", type=["csv"], key="live.upload"
            )
            capacity = st.number_input("Capacity", 64, 1_000_000, int(settings["capacity"]), 1000)
            batch = st.number_input("Batch size", 1, 1024, int(settings["batch"]))
            window = st.number_input("Window T (recurrent net)", 1, 64, int(settings["window"]))
            lr = st.number_input("Learning rate", 1e-6, 1.0, float(settings["lr"]), format="%.5f")
            gamma = st.slider("γ (discount)", 0.0, 1.0, float(settings["gamma"]), 0.01)
            target = st.radio(
                "Target network",
                ["soft", "hard"],
                index=["soft", "hard"].index(settings["target"]),
                horizontal=True,
            )
            seed = st.number_input("Seed", 0, 2**31 - 1, int(settings["seed"]))
            steps = st.number_input(
                "Env steps budget", 200, 5_000_000, int(settings["steps"]), 1000
            )
            use_preset = st.checkbox("Load the preset's own defaults", value=False)
            if st.form_submit_button("Apply and restart", type="primary"):
                if use_preset:
                    settings.update(settings_for_preset(preset_name))
                else:
                    settings.update(
                        preset=preset_name,
                        env=env_id,
                        capacity=int(capacity),
                        batch=int(batch),
                        window=int(window),
                        lr=float(lr),
                        gamma=float(gamma),
                        target=target,
                        seed=int(seed),
                        steps=int(steps),
                    )
                st.session_state["live.env_kwargs"] = None
                if upload is not None and settings["env"] == "rdqn/SyntheticMarket-v0":
                    data = upload.getvalue()
                    try:
                        load_prices_csv(save_upload(data))
                        st.session_state["live.env_kwargs"] = {"prices_csv": str(save_upload(data))}
                    except ValueError as err:
                        st.session_state["live.error"] = f"prices CSV rejected: {err}"
                        st.rerun()
                for name in ("alpha", "beta", "scheme"):
                    st.session_state.pop(f"live.{name}", None)
                restart()
                st.rerun()
        st.sidebar.button(
            "Back to the page defaults",
            key="live.defaults",
            on_click=lambda: settings.update(LIVE_DEFAULTS),
        )

if st.session_state.get("live.error"):
    st.error(st.session_state["live.error"])
st.query_params.update(to_params(settings))


# ---------------------------------------------------------------- live view
@st.fragment(run_every=1.0)
def live_view() -> None:
    run_id = parsed.run_id or st.session_state.get("live.run_id")
    handle = registry().get(run_id) if run_id else None
    snap = handle.snapshot() if handle is not None else None
    if snap is None:
        st.info(
            "Press **Start** to train with these settings, or **Step** to go one step at a time."
        )
        return
    metrics = st.columns(7)
    recent = snap.episode_returns[-20:]
    metrics[0].metric("Env steps", f"{snap.env_steps:,}")
    metrics[1].metric("Updates", f"{snap.updates:,}")
    metrics[2].metric("Episodes", f"{snap.episodes:,}")
    metrics[3].metric("Steps/s", f"{snap.steps_per_second:,.0f}")
    metrics[4].metric("β", f"{snap.beta:.3f}")
    metrics[5].metric("ε", f"{snap.epsilon:.3f}")
    metrics[6].metric("Return (last 20)", f"{np.mean(recent):.1f}" if recent.size else "–")
    st.progress(
        snap.progress, text=f"{snap.status} · run `{run_id}` · {snap.progress:.0%} of budget"
    )
    if snap.status == "failed":
        st.error(f"The run failed: {snap.error}")
    previous = registry().get(st.session_state.get("live.previous_run_id") or "")
    overlay = None
    if previous is not None and parsed.run_id is None:
        old = previous.snapshot(touch=False)
        if old is not None and old.episode_returns.size:
            overlay = (old.episode_end_steps, old.episode_returns)
    smoothing = st.session_state.get("live.smoothing", 0.9)
    charts = st.columns([3, 2])
    charts[0].plotly_chart(
        figures.reward_curve(
            snap.episode_end_steps,
            snap.episode_returns,
            smoothing=smoothing,
            overlay=overlay,
            scheme=snap.scheme,
        ),
        width="stretch",
        key="live.reward_chart",
    )
    charts[1].plotly_chart(
        figures.loss_curve(snap.log_updates, snap.losses, snap.td_abs_mean, scheme=snap.scheme),
        width="stretch",
        key="live.loss_chart",
    )


live_view()
st.slider("Curve smoothing (EMA)", 0.0, 0.99, key="live.smoothing", step=0.01)
run_id = st.session_state.get("live.run_id")
if run_id and parsed.run_id is None:
    st.caption(f"Share this run read-only: add `?run={run_id}` to this page's address.")
