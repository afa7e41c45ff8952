"""Replay internals: who gets replayed, with which weights, and how that changes over training."""

import streamlit as st

from dashboard import figures
from dashboard.display import show_chart
from dashboard.params import parse_params
from dashboard.state import ensure_app_frame, registry
from rdqn.training.telemetry import WEIGHT_EDGES, Histogram, relative_probability_histogram

ensure_app_frame()

st.title("Replay internals")
parsed = parse_params(st.query_params.to_dict())
run_id = parsed.run_id or st.session_state.get("live.run_id")
if not run_id:
    st.info("No run yet. Start one on the Live training page; its replay memory appears here.")
    st.page_link("pages/live.py", label="Live training", icon=":material/monitoring:")
    st.stop()
st.caption(
    "N·P(i) compares each transition's sampling probability with uniform replay: 1 means "
    "uniform, 10 means drawn ten times as often."
)


# Nine figures: refreshed every 2 s so that watching costs the training thread little.
@st.fragment(run_every=2.0)
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
    top[1].metric("ESS of last batch", f"{batch.ess:.1f} / {batch.indices.size}" if batch else "–")
    top[2].metric("Stale priority updates", f"{snap.stale_updates:,}")
    top[3].metric(
        "Sampler check p",
        f"{snap.fit.p_value:.3f}" if snap.fit else "–",
        help="Chi-square test of a fresh draw against P(i); a tiny p flags a bug",
    )
    st.caption(f"Run `{run_id}` · {snap.scheme} replay · update {snap.updates:,}")

    row = st.columns(3)
    show_chart(
        row[0],
        figures.histogram_figure(
            snap.priorities,
            title="Buffer: N·P(i)",
            x_title="N·P(i)",
            log_x_labels=True,
            color=color,
            reference=0.0,
        ),
        width="stretch",
    )
    sampled = weights = None
    if batch is not None:
        sampled = relative_probability_histogram(batch.probabilities, snap.buffer_size)
        weights = Histogram.of(batch.weights, WEIGHT_EDGES)
    show_chart(
        row[1],
        figures.histogram_figure(
            sampled,
            title="Last batch: N·P(i)",
            x_title="N·P(i)",
            log_x_labels=True,
            color=color,
            reference=0.0,
        ),
        width="stretch",
    )
    show_chart(
        row[2],
        figures.histogram_figure(
            weights, title="Last batch: IS weights", x_title="weight w_i", color=color
        ),
        width="stretch",
    )

    row = st.columns(2)
    show_chart(
        row[0],
        figures.heatmap_over_time(
            snap.priority_history, title="N·P(i) over training", y_title="N·P(i)", log_y_labels=True
        ),
        width="stretch",
    )
    show_chart(
        row[1],
        figures.heatmap_over_time(
            snap.weight_history, title="IS weights over training", y_title="weight w_i"
        ),
        width="stretch",
    )

    row = st.columns(3)
    show_chart(row[0], figures.td_stages_figure(snap.td_stages), width="stretch")
    show_chart(row[1], figures.fit_figure(snap.fit), width="stretch")
    show_chart(row[2], figures.age_figure(snap.age_counts, color=color), width="stretch")
    show_chart(st, figures.weights_scatter(batch), width="stretch")


internals()
