""" "Watch it play" on the live page: the run's latest greedy episode, animated in the browser, its
return and length, and "Play an episode now" for whoever controls the run. A run this server no
longer trains (a saved run, after a restart too) shows the latest episode its store keeps.

Redrawn every `WATCH_REFRESH_S` in a fragment of its own. An episode stays on show until it has
been shown once (`rdqn.dashboard.watch.watch_seconds`) before a newer one replaces it, unless the
viewer asked for a new one. While the same episode is on show the player's document does not
change (`rdqn.dashboard.watch.player_html`), so the browser keeps its
animation going; in a page run the document carries the run's mark, as the charts' configuration
does (`rdqn.dashboard.fragments`: nothing of a page run may be a reference to a cached element).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st

from rdqn.dashboard.display import projector_mode
from rdqn.dashboard.fragments import fragment, page_run_mark
from rdqn.dashboard.ownership import may_control
from rdqn.dashboard.state import registry, store
from rdqn.dashboard.watch import player_height, player_html, watch_seconds
from rdqn.serve.handle import RunHandle
from rdqn.training.episodes import PlayedEpisode

__all__ = ["WATCH_REFRESH_S", "watch_panel"]

WATCH_REFRESH_S = 3.0
"""Seconds between the panel's redraws: a run plays a new episode at most every 5 s."""


_DOCUMENT = "watch.document"
"""Session state: ((run id, episode seed, projector), the player's document)."""
_SHOWN = "watch.shown"
"""Session state: (run id, the episode on show, when it went on show, whether one was asked for)."""


def _on_show(run_id: str, latest: PlayedEpisode | None) -> PlayedEpisode | None:
    """The episode to show now: the one on show until it has played once (or a new one was
    asked for), then ``latest``. Episodes are told apart by their env seed (one each)."""
    if latest is None:
        return None
    now = time.monotonic()
    shown = st.session_state.get(_SHOWN)
    if shown is not None and shown[0] == run_id:
        _, episode, since, asked = shown
        if episode.seed == latest.seed:
            return episode
        if not asked and now - since < watch_seconds(episode):
            return episode
    st.session_state[_SHOWN] = (run_id, latest, now, False)
    return latest


def _player_document(run_id: str, episode: PlayedEpisode, projector: bool) -> str:
    """`player_html`, made once per episode on show and kept in the session (every redraw of
    the panel sends the same document)."""
    key = (run_id, episode.seed, projector)
    kept = st.session_state.get(_DOCUMENT)
    if kept is None or kept[0] != key:
        kept = (key, player_html(episode, projector=projector))
        st.session_state[_DOCUMENT] = kept
    return kept[1]


_STORED = "watch.stored"
"""Session state: (run id, the latest episode the store keeps of it), for a run not on this
server (any more): read once, it changes only if the run is resumed here."""


def _stored_episode(run_id: str) -> PlayedEpisode | None:
    kept = st.session_state.get(_STORED)
    if kept is None or kept[0] != run_id:
        try:
            episode = store().metrics.watched_episode(run_id)
        except KeyError:  # deleted meanwhile
            episode = None
        kept = (run_id, episode)
        st.session_state[_STORED] = kept
    return kept[1]


def _ask_for_episode(handle: RunHandle) -> None:
    handle.play_episode()
    shown = st.session_state.get(_SHOWN)
    if shown is not None:
        st.session_state[_SHOWN] = (*shown[:3], True)


@fragment(run_every=WATCH_REFRESH_S)
def watch_panel(shown_run: Callable[[], str | None]) -> None:
    """The panel for the run on show (``shown_run()``: asked at every redraw, since a followed
    class switches runs); nothing without one."""
    run_id = shown_run()
    if run_id is None:
        return
    container = st.container(key="live_area_watch")
    container.subheader("Watch it play")
    handle = registry().get(run_id)
    if handle is not None:
        snap = handle.snapshot(touch=False)
        latest = snap.played if snap is not None else None
    else:
        latest = _stored_episode(run_id)
    episode = _on_show(run_id, latest)
    if episode is None:
        container.caption(
            "The run plays a greedy episode of its policy as it starts, then every few "
            "training episodes."
            if handle is not None
            else "This run played no episode to watch."
        )
        return
    player, notes = container.columns([3, 2], gap="medium")
    projector = projector_mode()
    html = _player_document(run_id, episode, projector)
    if (mark := page_run_mark()) is not None:
        html += f"<!-- {mark} -->"
    with player:
        st.iframe(html, height=player_height(projector))
    ending = "the pole fell" if episode.terminated else "it reached the time limit"
    if episode.kind == "row":
        ending = "it reached the end" if episode.terminated else "it ran out of steps"
    elif episode.kind == "market":
        ending = "the price path ended"
    elif episode.kind == "frame":
        ending = "the game ended" if episode.terminated else "it reached the time limit"
    notes.metric(
        "Greedy return",
        f"{episode.episode_return:,.1f}",
        help="The policy alone, a = argmax Q, no exploration (the training explores).",
    )
    notes.caption(
        f"The policy as it was at step {episode.env_steps:,}: {episode.length:,} steps, until "
        f"{ending}. Played on an env of its own; the training never sees it."
    )
    if handle is not None and may_control(run_id) and handle.status in ("running", "paused"):
        notes.button(
            "Play an episode now",
            icon=":material/play_circle:",
            key="live.play_episode",
            on_click=_ask_for_episode,
            args=(handle,),
            help="The current policy plays one greedy episode (a new one also every few "
            "training episodes).",
        )
