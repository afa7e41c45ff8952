"""Replay internals: who gets replayed, with which weights, and how that changes over training."""

import streamlit as st

import rdqn.figures as figures
from rdqn.dashboard.assets import explanation
from rdqn.dashboard.display import show_chart
from rdqn.dashboard.fragments import fragment
from rdqn.dashboard.internals_notes import notice
from rdqn.dashboard.lessons import lesson_note
from rdqn.dashboard.live_run import live_run_id
from rdqn.dashboard.memories_panel import memories_panel
from rdqn.dashboard.params import parse_params
from rdqn.dashboard.state import ensure_app_frame, registry
from rdqn.figures.distributions import p_value_text
from rdqn.training.telemetry import relative_probability_histogram, weight_histogram

ensure_app_frame()

CHART_HEIGHT = 380

st.title("Replay internals")
parsed = parse_params(st.query_params.to_dict(), lesson_note=lesson_note)
run_id = parsed.run_id or live_run_id()
if not run_id:
    st.info("No run yet. Start one on the Live training page; its replay memory appears here.")
    st.page_link("pages/live.py", label="Live training", icon=":material/monitoring:")
    st.stop()
st.caption(
    "N·P(i) compares each memory's sampling probability with uniform replay: 1 means "
    "uniform, 10 means drawn ten times as often."
)


memories_panel(run_id)


def chart(where, fig, notice: str) -> None:  # noqa: ANN001 - a column or the page
    show_chart(where, fig, height=CHART_HEIGHT, width="stretch")
    where.caption(f"**What to look for:** {notice}")


# Nine figures: refreshed every 2 s so that watching costs the training thread little.
@fragment(run_every=2.0)
def internals() -> None:
    handle = registry().get(run_id)
    snap = handle.snapshot() if handle is not None else None
    if snap is None:
        st.warning(f"Run `{run_id}` is not running on this server any more; see Saved runs.")
        return
    batch = snap.last_batch
    color = figures.SCHEME_COLORS.get(snap.scheme)
    top = st.columns(4)
    top[0].metric(f"Buffer (of {snap.capacity:,})", f"{snap.buffer_size:,}")
    top[1].metric(
        "ESS of last batch",
        f"{batch.ess:.1f} / {batch.indices.size}" if batch else "–",
        help="Effective sample size (Σw)²/Σw²: the batch counts like this many equally weighted "
        "samples (all of them when the weights are equal).",
    )
    top[2].metric(
        "Stale priority updates",
        f"{snap.stale_updates:,}",
        help="TD errors dropped because their slot was overwritten before the update; 0 here, "
        "since this trainer updates right after sampling.",
    )
    top[3].metric(
        "Sampler check",
        p_value_text(snap.fit.p_value) if snap.fit else "–",
        help="Do fresh draws follow P(i)? A correct sampler gives any p between 0 and 1; "
        "p < 0.001 every time means a bug (see the last chart).",
    )
    st.caption(f"Run `{run_id}` · {snap.scheme} replay · update {snap.updates:,}")
    with st.expander("What ESS and stale updates mean"):
        st.markdown(explanation("internals_metrics"))

    sampled = weights = None
    if batch is not None:
        sampled = relative_probability_histogram(batch.probabilities, snap.items)
        weights = weight_histogram(batch.weights)
    nxp = {"x_title": "N·P(i)", "log_x_labels": True, "color": color, "reference": 0.0}

    st.subheader("Who gets replayed")
    row = st.columns(2)
    chart(
        row[0],
        figures.histogram_figure(snap.priorities, title="Buffer: N·P(i)", **nxp),
        notice("buffer", snap.scheme, snap.item),
    )
    chart(
        row[1],
        figures.histogram_figure(sampled, title="Last batch: N·P(i)", **nxp),
        notice("batch", snap.scheme, snap.item),
    )
    row = st.columns(2)
    chart(
        row[0],
        figures.histogram_figure(
            weights,
            title="Last batch: IS weights",
            x_title="weight w_i (log scale)",
            log_x_labels=True,
            color=color,
        ),
        notice("weights", snap.scheme, snap.item),
    )
    chart(
        row[1],
        figures.weights_scatter(batch, title="Last batch: weight vs P(i)", with_ess=False),
        notice("scatter", snap.scheme, snap.item),
    )

    st.subheader("Over training")
    row = st.columns(2)
    chart(
        row[0],
        figures.heatmap_over_time(
            snap.priority_history, title="N·P(i) over training", y_title="N·P(i)", log_y_labels=True
        ),
        notice("priority_history", snap.scheme, snap.item),
    )
    chart(
        row[1],
        figures.heatmap_over_time(
            snap.weight_history,
            title="IS weights over training",
            y_title="weight w_i",
            log_y_labels=True,
        ),
        notice("weight_history", snap.scheme, snap.item),
    )
    row = st.columns(2)
    chart(
        row[0],
        figures.td_stages_figure(snap.td_stages),
        notice("td_stages", snap.scheme, snap.item),
    )
    chart(
        row[1],
        figures.age_figure(snap.age_counts, color=color),
        notice("ages", snap.scheme, snap.item),
    )

    st.subheader("Is the sampler right?")
    row = st.columns(2)
    show_chart(row[0], figures.fit_figure(snap.fit), height=CHART_HEIGHT, width="stretch")
    row[1].markdown(explanation("internals_sampler_check"))


internals()
