"""Tests for rdqn.dashboard.params: URL names <-> config fields, checked by the config's own
rules."""

from __future__ import annotations

import pytest

from rdqn.config import config_field
from rdqn.dashboard.lessons import lesson_note
from rdqn.dashboard.params import URL_ALIASES, parse_params, to_params
from rdqn.presets import configure


def test_every_url_name_is_a_config_field() -> None:
    for path in URL_ALIASES.values():
        assert config_field(path).metadata["rule"] is not None
    assert len(set(URL_ALIASES.values())) == len(URL_ALIASES)


def test_parse_reads_values_as_their_fields_types() -> None:
    parsed = parse_params(
        {
            "preset": "e14",
            "alpha": "0.8",
            "beta": "1",
            "scheme": "rank",
            "seed": "3",
            "capacity": "20000",
            "target": "hard",
            "env": "CartPole-v1",
        },
        lesson_note=lesson_note,
    )
    assert parsed.notes == []
    assert parsed.preset == "e14"
    assert parsed.overrides == {
        "env.id": "CartPole-v1",
        "replay.scheme": "rank",
        "replay.alpha": 0.8,
        "replay.beta0": 1.0,
        "seed": 3,
        "replay.capacity": 20_000,
        "agent.target_update": "hard",
    }
    assert isinstance(parsed.overrides["seed"], int)
    config = configure("e14", parsed.overrides)
    assert (config.env.id, config.replay.alpha, config.seed) == ("CartPole-v1", 0.8, 3)


@pytest.mark.parametrize(
    ("params", "note"),
    [
        (
            {"preset": "e16"},
            "ignored preset='e16': use one of e14, e14-lesson, e15, per-notebook, paper",
        ),
        ({"alpha": "high"}, "ignored alpha='high': replay.alpha must be in [0, 1], got 'high'"),
        ({"alpha": "nan"}, "ignored alpha='nan': replay.alpha must be in [0, 1], got nan"),
        ({"beta": "7"}, "ignored beta='7': replay.beta0 must be in [0, 1], got 7.0"),
        ({"seed": "-1"}, "ignored seed='-1': seed must be an integer from 0 to 2,147,483,647"),
        ({"seed": "1.5"}, "ignored seed='1.5': seed must be an integer from 0 to 2,147,483,647"),
        ({"scheme": "greedy"}, "ignored scheme='greedy': replay.scheme must be one of"),
        ({"env": "Pong-v5"}, "ignored env='Pong-v5': env.id must be one of"),
        ({"window": "4"}, "ignored window='4': replay.window must be 1 for the mlp network"),
        ({"lesson": "x"}, "ignored lesson='x': use one of why-prioritize, alpha-beta, schemes"),
        ({"run": "../etc"}, "ignored run='../etc': not a run id"),
    ],
)
def test_bad_values_are_ignored_with_a_note(params: dict[str, str], note: str) -> None:
    parsed = parse_params(params, lesson_note=lesson_note)
    assert parsed.overrides == {} and parsed.preset is None and parsed.run_id is None
    assert len(parsed.notes) == 1 and parsed.notes[0].startswith(note), parsed.notes


def test_a_value_that_conflicts_with_an_earlier_one_is_ignored() -> None:
    parsed = parse_params({"capacity": "64", "batch": "128"}, lesson_note=lesson_note)
    assert parsed.overrides == {"replay.capacity": 64}
    assert parsed.notes == [
        "ignored batch='128': replay.batch_size must be <= capacity (64), got 128"
    ]


def test_lesson_and_run() -> None:
    parsed = parse_params({"lesson": "alpha", "run": "abc123"}, lesson_note=lesson_note)
    assert parsed.lesson == "alpha" and parsed.run_id == "abc123"


def test_to_params_round_trips_through_parse() -> None:
    overrides = {"replay.alpha": 0.7, "seed": 4, "replay.scheme": "uniform", "env.kwargs": {}}
    params = to_params("per-notebook", overrides)
    assert params == {"preset": "per-notebook", "scheme": "uniform", "alpha": "0.7", "seed": "4"}
    parsed = parse_params(params, lesson_note=lesson_note)
    assert parsed.preset == "per-notebook"
    assert parsed.overrides == {k: v for k, v in overrides.items() if k != "env.kwargs"}


def test_every_field_the_page_edits_has_a_url_name() -> None:
    from rdqn.dashboard.config_widgets import FORM_FIELDS, SEQUENCE_FIELDS

    edited = {*FORM_FIELDS, *SEQUENCE_FIELDS, "replay.scheme", "replay.alpha", "replay.beta0"}
    assert edited <= set(URL_ALIASES.values())


@pytest.mark.parametrize(
    ("params", "note"),
    [
        ({"capacity": "2000000"}, "replay.capacity must be at most 1,000,000 on this server"),
        ({"steps": "6000000"}, "train.total_steps must be at most 5,000,000 on this server"),
        ({"preset": "e14", "window": "65"}, "replay.window must be at most 64 on this server"),
    ],
)
def test_values_beyond_the_servers_limits_are_ignored(params: dict[str, str], note: str) -> None:
    parsed = parse_params(params, lesson_note=lesson_note)
    assert parsed.overrides == {}
    assert note in parsed.notes[0]


def test_floats_travel_exactly_and_warm_up_has_a_name() -> None:
    params = to_params("per-notebook", {"replay.alpha": 0.123456789, "train.learning_starts": 64})
    assert params["alpha"] == "0.123456789" and params["warmup"] == "64"
    parsed = parse_params(params, lesson_note=lesson_note)
    assert parsed.overrides == {"replay.alpha": 0.123456789, "train.learning_starts": 64}


def test_sequence_replay_travels_in_the_url_whatever_order_its_fields_come_in() -> None:
    """R2D2's sequences of 16 steps overlapping by 8 with 8 burnt in: with the preset's 40/20/20
    each field alone conflicts with another (16 <= overlap 20); read together they are one run."""
    overrides = {
        "replay.mode": "sequences",
        "replay.sequence_length": 16,
        "replay.sequence_overlap": 8,
        "replay.burn_in": 8,
        "replay.stored_state": False,
    }
    params = to_params("e14-lesson", overrides)
    assert params["mode"] == "sequences" and params["stored"] == "False"
    reordered = dict(reversed(list(params.items())))
    parsed = parse_params(reordered, lesson_note=lesson_note)
    assert parsed.notes == [] and parsed.overrides == overrides
    replay = configure("e14-lesson", parsed.overrides).replay
    assert (replay.sequence_length, replay.burn_in, replay.stored_state) == (16, 8, False)
    refused = parse_params({"preset": "per-notebook", "mode": "sequences"}, lesson_note=lesson_note)
    assert refused.overrides == {} and "ignored mode='sequences'" in refused.notes[0]
