"""The line under each Replay internals chart: one per chart, replaced where a scheme makes the
chart look different."""

from __future__ import annotations

import pytest

from rdqn.dashboard.internals_notes import notice

CHARTS = (
    "buffer",
    "batch",
    "weights",
    "scatter",
    "priority_history",
    "weight_history",
    "td_stages",
    "ages",
)


def test_every_chart_has_a_line_for_every_scheme() -> None:
    for scheme in ("proportional", "rank", "uniform"):
        assert all(notice(chart, scheme) for chart in CHARTS)


def test_rank_and_uniform_get_their_own_line_where_the_chart_differs() -> None:
    widens = notice("priority_history", "proportional")
    assert "band that widens" in widens
    assert "by rank alone" in notice("priority_history", "rank")
    assert "one line at 1" in notice("priority_history", "uniform")
    assert "every weight is 1" in notice("weight_history", "uniform")
    assert notice("td_stages", "rank") == notice("td_stages", "proportional")  # no change


def test_an_unknown_chart_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        notice("no such chart", "proportional")


def test_under_sequence_replay_the_notes_speak_of_sequences() -> None:
    for scheme in ("uniform", "proportional", "rank"):
        for chart in CHARTS:
            said = notice(chart, scheme, "sequence")
            assert "transition" not in said and "{" not in said, (scheme, chart)
    assert "One dot per replayed sequence" in notice("scatter", "proportional", "sequence")
    assert "One dot per replayed transition" in notice("scatter", "proportional")
