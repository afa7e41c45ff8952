"""What the live page shows of a run: its state, steps and time left, reward and loss curves,
counters; a queued run's place and wait, a run waiting for the kernel warm-up; the class's share
links; the outline of a lesson step's area.

Read from the run's latest `Telemetry` snapshot while the registry has it, and from the run store
otherwise (a finished run, or one from before a server restart), so a shared link keeps working.
"""

from __future__ import annotations

import base64
import contextlib
import html
from urllib.parse import urlsplit

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from streamlit import net_util

import rdqn.figures as figures
from rdqn.compare import ROLLING_WINDOW, run_label
from rdqn.dashboard.display import projector_mode, shared_steady_chart, show_chart
from rdqn.dashboard.eta import RunRates, duration_text, queue_wait_seconds, remaining_seconds
from rdqn.dashboard.settings_apply import prices_note
from rdqn.dashboard.share import LOOPBACK, follow_link, qr_png, run_link, server_address
from rdqn.dashboard.state import for_this_viewer, live_pages, registry, session, store
from rdqn.dashboard.text import plain, why_stopped
from rdqn.runs.resume import resume_blocker, stored_evaluations
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.serve.handle import RunHandle
from rdqn.training.telemetry import Telemetry

__all__ = [
    "LESSON_CSS",
    "class_code_button",
    "highlight_css",
    "run_view",
    "share_panel",
    "stored_run_view",
    "watch_a_class_instead",
]

CHART_HEIGHT = 330
"""The live charts' height (px): the controls and the reward curve fit a 1280×720 screen."""
LESSON_CHART_HEIGHT = 260
"""The live charts' height under a lesson's panel: at 1280×720 the panel and the outlined
chart whole fit the first screen, in projector mode too (`PROJECTOR_HEIGHT` times as tall)."""
LESSON_CSS = """<style>
.stMainBlockContainer { padding-top: 1rem; }
.stMainBlockContainer [data-testid="stVerticalBlock"] { gap: 0.5rem; }
.st-key-live_lesson { padding: 0.5rem 0.75rem; gap: 0.25rem; }
</style>"""
"""In a lesson, the page starts at the top of the screen (every page leaves 2.5rem:
`rdqn.dashboard.display`), its rows half as far apart as Streamlit sets them, and its panel
has less padding around its text: the first screen is for the chart it points at (at 1280×720
that chart, whole, under the panel)."""


def highlight_css(area: str) -> str:
    """A style that outlines one area of the live page (`rdqn.dashboard.guided.HIGHLIGHTS`: the
    controls, the reward or loss chart, the counters) for a lesson step."""
    return (
        f"<style>.st-key-live_area_{area} {{ outline: 4px solid #f5a623; outline-offset: 6px; "
        "border-radius: 6px; }</style>"
    )


@st.cache_resource(show_spinner=False)
def _run_rates() -> RunRates:
    """The smoothed rate of every run on this server, by run id, for every session's pages."""
    return RunRates()


def _smoothed_rate(handle: RunHandle, snap: Telemetry) -> float:
    """The run's rate for its time left: what its latest snapshot measured, smoothed over the
    page redraws (`rdqn.dashboard.eta.smooth_rate`); 0 while it has none."""
    return _run_rates().observe(handle.id, snap.steps_per_second, speed=handle.speed)


def _metrics(snap: Telemetry, status: str, scheme: str) -> None:
    """The run's counters: one row of seven, or two rows of four in projector mode, whose
    large digits do not fit "30,000" into a seventh of a 1280-pixel screen."""
    per_row = 4 if projector_mode() else 7
    area = st.container(key="live_area_metrics")
    cells = [cell for _ in range(-(-7 // per_row)) for cell in area.columns(per_row)]
    recent = snap.episode_returns[-ROLLING_WINDOW:]
    rate = snap.steps_per_second if status == "running" else 0.0
    cells[0].metric("Env steps", f"{snap.env_steps:,}")
    cells[1].metric("Updates", f"{snap.updates:,}")
    cells[2].metric("Episodes", f"{snap.episodes:,}")
    cells[3].metric("Steps/s", f"{rate:,.0f}")
    if scheme == "uniform":
        cells[4].metric("β", "–", help="Uniform replay draws every memory alike: no IS correction")
    else:
        cells[4].metric("β", f"{snap.beta:.3f}", help="IS correction now (annealed from β₀ to 1)")
    cells[5].metric(
        "Explore rate",
        f"{snap.epsilon:.3f}",
        help="Probability of a random action (exploration), annealed over the first steps; "
        "not the priority offset ε of |δ| + ε",
    )
    cells[6].metric(
        f"Return (last {ROLLING_WINDOW})", f"{np.mean(recent):.1f}" if recent.size else "–"
    )


def run_view(
    run_id: str | None,
    *,
    previous_run_id: str | None,
    smoothing: float,
    watching: bool = False,
    lesson_highlight: str | None = None,
) -> None:
    """Counters, progress and curves of a run in the registry; the previous run as an overlay.
    ``watching``: read-only (a student following the teacher, or watching one run).
    ``lesson_highlight``: under a lesson's panel, the area its step outlines (or ""): shorter
    charts, and the counters above them when they are the outlined area, so that it is on the
    first screen.

    Redrawn every second: while a run is on screen the page has the same parts in the same
    places at every redraw (its state, the two charts, the counters), whatever the run is
    doing, so that the browser updates the charts in place (`rdqn.dashboard.display.steady_chart`);
    a run without a snapshot yet (starting, queued, ended elsewhere) has empty charts."""
    handle = registry().get(run_id) if run_id else None
    snap = handle.snapshot() if handle is not None else None
    if run_id is None:
        _no_run(watching=watching)
        return
    state = st.container()
    charts = st.columns([3, 2])
    # Below the charts, but filled before them: the counters show as soon as the page runs, the
    # charts as they are built and drawn (a second or more on a busy machine).
    counters = st.container()
    height = CHART_HEIGHT if lesson_highlight is None else LESSON_CHART_HEIGHT
    if handle is None or snap is None:
        with state:
            message = _waiting(run_id, handle is not None, watching=watching)
        for column, area, title in ((0, "reward", "Episode return"), (1, "loss", "Training loss")):
            shared_steady_chart(
                charts[column].container(key=f"live_area_{area}"),
                lambda title=title: figures.empty_figure(title, message),
                key=("live empty", title, message),
                pins=(),
                name=f"live_{area}",
                height=height,
            )
        return
    with state:
        status = _run_state(run_id, handle, snap, watching=watching)
    # The outlined counters of a lesson step go above the charts.
    with state if lesson_highlight == "metrics" else counters:
        _metrics(snap, status, handle.config.replay.scheme)
    previous = registry().get(previous_run_id) if previous_run_id else None
    old = previous.snapshot(touch=False) if previous is not None else None
    overlay_label = f"previous: {run_label(previous.config)}" if previous is not None else None
    # One figure per snapshot for every session drawing it (a class follows one run).
    pins = (snap, old)
    shared_steady_chart(
        charts[0].container(key="live_area_reward"),
        lambda: _reward_figure(snap, old, overlay_label, smoothing),
        key=("live reward", run_id, smoothing, overlay_label),
        pins=pins,
        name="live_reward",
        height=height,
    )
    shared_steady_chart(
        charts[1].container(key="live_area_loss"),
        lambda: _loss_figure(snap, old, overlay_label, smoothing),
        key=("live loss", run_id, smoothing, overlay_label),
        pins=pins,
        name="live_loss",
        height=height,
    )


def _reward_figure(
    snap: Telemetry, old: Telemetry | None, overlay_label: str | None, smoothing: float
) -> go.Figure:
    """The run's returns and its greedy episodes' returns, and the smoothed returns of the run
    it replaced (``old``)."""
    has_old = old is not None and old.episode_returns.size > 0
    greedy, evaluations = snap.greedy, snap.evaluations
    return figures.reward_curve(
        snap.episode_end_steps,
        snap.episode_returns,
        smoothing=smoothing,
        overlay=(old.episode_end_steps, old.episode_returns) if has_old else None,
        overlay_label=overlay_label or "previous run",
        scheme=snap.scheme,
        greedy=(greedy.env_steps, greedy.returns) if greedy is not None else None,
        evaluation=(evaluations.env_steps, evaluations.means) if evaluations else None,
    )


def _loss_figure(
    snap: Telemetry, old: Telemetry | None, overlay_label: str | None, smoothing: float
) -> go.Figure:
    """The run's loss and mean |TD error|, and the |TD error| of the run it replaced."""
    has_old = old is not None and old.td_abs_mean.size > 0
    return figures.loss_curve(
        snap.log_updates,
        snap.losses,
        snap.td_abs_mean,
        smoothing=smoothing,
        overlay=(old.log_updates, old.td_abs_mean) if has_old else None,
        overlay_label=overlay_label or "previous run",
        scheme=snap.scheme,
    )


def _waiting(run_id: str, registered: bool, *, watching: bool) -> str:
    """What a run with no snapshot is doing (it has ended, waits in the queue, or is about to
    start), shown at the top; returns what its empty charts say."""
    place = registry().position(run_id)
    ended = None  # (status, reason) of a run that has ended, live or stored
    if registered or not watching:
        with contextlib.suppress(KeyError):  # a run deleted meanwhile shows as none
            ended = registry().status_of(run_id)
    if ended is not None and ended[0] in FINAL_STATUSES:
        _ending(run_id, *ended, watching=watching)
        return f"run {ended[0]}: its curves are in Saved runs"
    if place is not None:
        _queued(run_id, *place)
    elif registered:
        _preparing(run_id)
    else:
        _no_run(watching=watching)
    return figures.EMPTY_MESSAGE


def _no_run(*, watching: bool) -> None:
    if watching:
        st.info("Waiting for the teacher to start a run…", icon=":material/hourglass_top:")
    else:
        st.info(
            "Press **Start** to train with these settings, or **Step** to go one step at a time."
        )


def _run_state(run_id: str, handle: RunHandle, snap: Telemetry, *, watching: bool) -> str:
    """The run's status line (state, steps, time left, warm-up) and notices; returns its status."""
    # The handle, not the snapshot, says what the run is now: the worker's last report, and how
    # the run ended when its worker could not say (it died, or was killed for not stopping).
    status, error = handle.status, handle.error or snap.error
    total = handle.config.train.total_steps
    state = plain(status)
    if status == "finished" and (train := handle.config.train).reached_goal(snap.env_steps):
        state += f": {train.finished_how(snap.env_steps)}"
    line = (
        f"{state} · run `{run_id}` ({plain(run_label(handle.config))}) · "
        f"{snap.env_steps:,} of {total:,} steps"
    )
    if status == "running":
        left = remaining_seconds(snap.env_steps, total, _smoothed_rate(handle, snap))
        line += f" · {duration_text(left)} left" if left is not None else ""
    if snap.updates == 0 and (warm_up := handle.config.train.learning_starts) > snap.env_steps:
        # Until then nothing learns: no loss, Updates stays 0, a Step only moves the counters.
        line += f" · filling the memory: learning starts after {warm_up:,} steps"
    st.progress(snap.progress, text=line)
    if (prices := prices_note(handle.config)) is not None:
        st.caption(prices)
    if status in ("failed", "stopped"):
        _ending(run_id, status, error, watching=watching)
    elif status == "paused" and (place := registry().position(run_id)) is not None:
        st.info(
            f"Every training slot is taken: the run goes on when one frees (place {place[0]} of "
            f"{place[1]} in the queue).",
            icon=":material/hourglass_top:",
        )
    return status


def _ending(run_id: str, status: str, error: str | None, *, watching: bool) -> None:
    """How a run ended: failed with its error, stopped with its reason (and how to go on)."""
    if status == "failed":
        why = for_this_viewer(error or "no error was recorded")
        st.error(f"The run failed: {plain(why)}", icon=":material/error:")
    elif status == "stopped":
        why = for_this_viewer(why_stopped(error))
        goes_on = (
            " Press **Resume** to go on where it stopped."
            if not watching and resume_blocker(store(), run_id) is None
            else ""
        )
        st.warning(f"The run stopped: {plain(why)}.{goes_on}", icon=":material/stop_circle:")
    else:
        st.info(f"Run `{run_id}` {plain(status)}.", icon=":material/check_circle:")


def _preparing(run_id: str) -> None:
    """A run about to train: the server's kernel warm-up while it lasts (a minute on the first
    start of a fresh checkout, seconds later: `python -m rdqn warm-up` does it at install)."""
    warm = registry().warm_up_progress()
    if warm.ready:
        st.info(f"Run `{run_id}` is starting: preparing to train…")
        return
    what = "compiling" if warm.compiling else "loading"
    first = " (first start only: about a minute)" if warm.compiling else ""
    st.progress(
        warm.done / warm.total,
        text=f"Preparing fast kernels{first}: {what} {warm.part or 'kernels'}, "
        f"part {min(warm.done + 1, warm.total)} of {warm.total}. Run `{run_id}` starts after.",
    )


def _queued(run_id: str, place: int, waiting: int) -> None:
    """A queued run: its place, about how long until it starts, and a class to watch meanwhile."""
    remaining, rates = [], []
    for other in registry().runs():
        snap = other.snapshot(touch=False) if other.status == "running" else None
        total = other.config.train.total_steps
        rate = _smoothed_rate(other, snap) if snap is not None else 0.0
        if rate > 0:
            rates.append(rate)
        remaining.append(remaining_seconds(snap.env_steps, total, rate) if snap else None)
    rate = sum(rates) / len(rates) if rates else 0.0
    ahead = [
        remaining_seconds(0, registry().get(queued).config.train.total_steps, rate)
        for queued in registry().queued_ids()[: place - 1]
    ]
    wait = queue_wait_seconds(place, remaining, ahead)
    estimate = duration_text(wait) if wait is not None else ""
    st.info(
        f"Every training slot of this server is taken: run `{run_id}` waits in the queue, place "
        f"{place} of {waiting}, and starts by itself when a slot frees"
        + (f" ({estimate}, sooner if a run is stopped)." if estimate else "."),
        icon=":material/hourglass_top:",
    )


def watch_a_class_instead(run_id: str | None) -> None:
    """While this session's run ``run_id`` waits in the queue, a class to watch instead (the one
    the student forked from, or up to three on show): asked first, then the run gives up its
    place (stopped: it can still start later, from Saved runs) and the page follows the class.
    Drawn with the page's controls, not in its view redrawn every second, so it holds still."""
    if run_id is None or registry().position(run_id) is None:
        return
    came_from = st.session_state.get("live.came_from_class")
    codes = [came_from] if came_from else live_pages().classes(besides=session().owner)
    for code in codes[:3]:
        label = "Watch the teacher instead" if len(codes) == 1 else f"Watch class {code} instead"
        with st.popover(label, icon=":material/visibility:"):
            st.markdown(
                f"Run `{run_id}` gives up its place in the queue; it stays in *Saved runs*, "
                "where it can start later."
            )
            st.button(
                "Give up my place and watch",
                key=f"live.watch_class.{code}",
                on_click=_give_up_and_follow,
                args=(run_id, code),
            )


def _give_up_and_follow(run_id: str, code: str) -> None:
    with contextlib.suppress(KeyError):  # it started or ended meanwhile: nothing to give up
        if registry().position(run_id) is not None:
            registry().stop(
                run_id,
                wait=False,
                owner=session().owner,
                reason=f"stopped: it gave up its place in the queue to watch class {code}",
            )
    st.query_params["follow"] = code


def _listens_on_network() -> bool:
    """Whether the server is bound to all interfaces (the default): reachable at the machine's
    address."""
    return (st.get_option("server.address") or "") in ("", "0.0.0.0", "::")


def _address() -> str:
    return server_address(
        st.context.url or "http://localhost:8501/live",
        network_host=net_util.get_internal_ip() if _listens_on_network() else None,
    )


def class_code_button() -> None:
    """A button that shows this browser's class code full screen, for the back row."""
    if st.button(
        "Class code",
        icon=":material/fullscreen:",
        key="live.big_code",
        help="The class code full screen, large enough for the back row",
    ):
        code = live_pages().class_code(session().owner)
        class_code_full_screen(code, follow_link(_address(), code))


def share_panel(run_id: str | None) -> None:
    """The class's links: follow this session's runs (QR code, copyable), or watch one run."""
    listens_on_network = _listens_on_network()
    address = _address()
    code = live_pages().class_code(session().owner)
    link = follow_link(address, code)
    if (urlsplit(address).hostname or "") in LOOPBACK:
        why = (
            "no network address was found for this machine"
            if listens_on_network
            else f"the server listens on {st.get_option('server.address')} only"
        )
        st.warning(
            f"These links work on this computer only: {why}. For a class, start the server "
            "without --server.address and open the dashboard at the machine's network address "
            "(docs/classroom.md, *Running a class on a LAN*).",
            icon=":material/wifi_off:",
        )
    st.markdown("**Follow along**: students see the run on this page, whichever it is.")
    st.markdown(f"### Class code `{code}`")
    st.image(qr_png(link), width=240)
    st.code(link, language=None)
    if run_id:
        st.markdown("**This run only**")
        st.code(run_link(address, run_id), language=None)
    st.caption(
        ("Both open" if run_id else "It opens")
        + " read-only; *Try this setup myself* gives a student a run of their own."
    )


@st.dialog("Follow this class", width="large")
def class_code_full_screen(code: str, link: str) -> None:
    """The class code as large as a projector shows it to the back row, with its QR code and
    link: students type the link, or scan the code."""
    # The QR code as tall as the screen leaves below the code (half of it), drawn pixel-sharp:
    # a phone at the back of the room reads a code of 500 px on a 1000 px projector.
    qr = base64.b64encode(qr_png(link)).decode("ascii")
    st.html(
        '<div style="text-align:center;font-size:min(22vw,11rem);font-weight:700;'
        f'letter-spacing:0.15em;line-height:1.1">{code}</div>'
        f'<div style="text-align:center"><img src="data:image/png;base64,{qr}" alt="QR code" '
        'style="height:min(50vh,40rem);image-rendering:pixelated"></div>'
        f'<p style="text-align:center">Open <b>{html.escape(link)}</b>, or scan the code.</p>'
    )


def stored_run_view(run_id: str) -> bool:
    """A run the registry no longer has, from the store: its status and reward curve, with the
    greedy returns it played for its watchers; False when the store has no such run."""
    try:
        record = store().get_run(run_id)
        episodes = store().metrics.episodes(run_id)
        greedy = store().metrics.greedy_returns(run_id)
        evaluations = stored_evaluations(store(), run_id)
    except KeyError:
        st.warning(f"No run with id {run_id!r} on this server.")
        return False
    st.markdown(f"Status **{plain(record.status)}** · {record.env_steps:,} env steps")
    show_chart(
        st.container(key="live_area_reward"),
        figures.reward_curve(
            episodes["env_steps"].to_numpy(),
            episodes["return"].to_numpy(),
            scheme=record.scheme,
            greedy=(greedy.env_steps, greedy.returns) if len(greedy) else None,
            evaluation=(evaluations.env_steps, evaluations.means) if evaluations else None,
        ),
        width="stretch",
    )
    return True
