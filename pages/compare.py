"""Compare schemes: one agent on the same seeds with uniform, proportional and rank-based replay.

It opens on the `chain-lesson` preset, where prioritization wins within a minute; the note under
the form says why, and why CartPole would need 60,000-90,000 steps. The runs of one comparison
share a group id in the store; the group id also travels in the URL (`?group=...`), so a reload,
or the link, shows the same comparison again.
"""

from __future__ import annotations

import streamlit as st

from rdqn.compare import (
    LESSON_PRESET,
    PAPER_RANK_PRESETS,
    comparison_configs,
)
from rdqn.config import SCHEMES
from rdqn.dashboard.assets import explanation
from rdqn.dashboard.comparisons import (
    comparison_results,
    group_is_live,
    linked_group,
    may_stop,
    start_comparison,
    stop_runs,
)
from rdqn.dashboard.config_widgets import config_widget
from rdqn.dashboard.fragments import fragment
from rdqn.dashboard.history import comparison_base, default_budget
from rdqn.dashboard.ownership import actor, not_yours_note
from rdqn.dashboard.return_threshold import return_threshold_input
from rdqn.dashboard.state import ensure_app_frame, registry, store
from rdqn.dashboard.text import plain
from rdqn.presets import PAPER_RANK_ALPHA, preset

ensure_app_frame()

st.title("Compare replay schemes")
st.caption(
    "The same agent, the same seeds, three ways to replay: the mean learning curve of each "
    "scheme with a band from its worst to its best seed."
)

left, middle, right, far = st.columns(4)
preset_name = config_widget(left, "preset", LESSON_PRESET, key="compare.preset")
base = preset(preset_name)
env_id = config_widget(middle, "env.id", base.env.id, key=f"compare.env.{preset_name}")
seed_count = right.number_input("Seeds per scheme", 1, 5, 3, key="compare.seeds")
steps = config_widget(
    far, "train.total_steps", default_budget(preset_name), key=f"compare.steps.{preset_name}"
)
schemes = st.multiselect(
    "Replay schemes", SCHEMES, default=list(SCHEMES), key="compare.schemes", format_func=str.title
)
runs_wanted = len(schemes) * int(seed_count)
seeds = "seed 0" if seed_count == 1 else f"seeds 0–{int(seed_count) - 1}"
at_once = registry().max_active
note = f"{runs_wanted} runs of {int(steps):,} env steps, {seeds}; "
note += f"{at_once} run{'s' if at_once != 1 else ''} train{'s' if at_once == 1 else ''} at once "
note += "on this server, the rest wait in line (the first seed of every scheme goes first)."
if preset_name in PAPER_RANK_PRESETS and "rank" in schemes:
    note += f" Rank-based replay uses the paper's α {PAPER_RANK_ALPHA}."
st.caption(note)
if preset_name == LESSON_PRESET and env_id == base.env.id:
    st.info(explanation("compare_lesson"), icon=":material/lightbulb:")
elif env_id == "CartPole-v1":
    st.info(explanation("compare_cartpole"), icon=":material/hourglass_top:")

group_id, run_ids = linked_group()
if st.button("Run comparison", type="primary", key="compare.run", disabled=not schemes):
    try:
        group_id, run_ids = start_comparison(
            comparison_configs(
                comparison_base(preset_name, env_id, int(steps)), schemes, range(int(seed_count))
            )
        )
    except ValueError as err:
        st.error(f"Cannot start this comparison: {plain(err)}")

if group_id:
    st.divider()
    live = group_is_live(run_ids)
    heading, threshold_box, stop_box = st.columns([3, 1, 1], vertical_alignment="bottom")
    records = store().list_runs(group_id=group_id)
    group_env = records["env_id"].iloc[0] if not records.empty else env_id
    heading.subheader(f"Comparison {plain(group_id)}")
    if not records.empty:
        heading.caption(
            f"{plain(records['preset'].iloc[0])} preset on {plain(group_env)}: "
            f"{len(records)} runs, seeds {', '.join(map(str, sorted(set(records['seed']))))}"
        )
    threshold = return_threshold_input(threshold_box, group_env, f"compare.threshold.{group_id}")
    mine = may_stop(run_ids)
    if stop_box.button("Stop comparison", key="compare.stop", disabled=not (live and mine)):
        stop_runs(run_ids, actor())
        st.rerun()
    if live and not mine:
        st.caption(not_yours_note(run_ids[0]))
    fragment(run_every=1.0 if live else None)(comparison_results)(run_ids, threshold, live)
