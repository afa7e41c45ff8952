"""Tests for rdqn.validation: one set of rules and messages for every boundary."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import pytest

from rdqn.validation import (
    Choice,
    Flag,
    Integer,
    Mapping,
    Real,
    check_choice,
    check_fields,
    check_flag,
    check_integer,
    check_probability,
    check_real,
    is_integer,
    is_real,
    setting,
    shown,
)


@pytest.mark.parametrize(
    ("value", "integer", "real"),
    [
        (3, True, True),
        (np.int64(3), True, True),
        (np.uint8(3), True, True),
        (2.5, False, True),
        (np.float32(2.5), False, True),
        (True, False, False),
        (np.bool_(True), False, False),
        (math.nan, False, False),
        (math.inf, False, False),
        (-math.inf, False, False),
        ("3", False, False),
        (None, False, False),
        (10**400, True, False),  # an int too large for a float is not a finite real
        (3 + 0j, False, False),
    ],
)
def test_what_counts_as_an_integer_and_a_real(value: object, integer: bool, real: bool) -> None:
    assert is_integer(value) is integer
    assert is_real(value) is real


def test_checks_return_plain_python_numbers() -> None:
    assert type(check_integer("n", np.int32(4), minimum=1)) is int
    assert type(check_real("x", np.float32(0.5))) is float
    assert type(check_real("x", 2)) is float
    assert check_probability("p", 1) == 1.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: check_integer("capacity", 0, minimum=1),
            "capacity must be an integer >= 1, got 0",
        ),
        (lambda: check_integer("n", 2.0, minimum=1), "n must be an integer >= 1, got 2.0"),
        (lambda: check_integer("n", True), "n must be an integer, got True"),
        (lambda: check_integer("k", 9, maximum=8), "k must be an integer <= 8, got 9"),
        (
            lambda: check_integer("seed", -1, minimum=0, maximum=10),
            "seed must be an integer from 0 to 10, got -1",
        ),
        (lambda: check_real("alpha", -1, minimum=0), "alpha must be a finite number >= 0, got -1"),
        (
            lambda: check_real("lr", 0.0, minimum=0, open_minimum=True),
            "lr must be a finite number > 0, got 0.0",
        ),
        (lambda: check_real("x", math.nan), "x must be a finite number, got nan"),
        (lambda: check_real("x", "1"), "x must be a finite number, got '1'"),
        (
            lambda: check_real("tau", 0, minimum=0, maximum=1, open_minimum=True),
            r"tau must be in (0, 1], got 0",
        ),
        (lambda: check_probability("beta0", 1.5), "beta0 must be in [0, 1], got 1.5"),
        (lambda: check_probability("beta0", True), "beta0 must be in [0, 1], got True"),
        (
            lambda: check_choice("scheme", "greedy", ("uniform", "rank")),
            "scheme must be one of ('uniform', 'rank'), got 'greedy'",
        ),
        (lambda: check_flag("dueling", 1), "dueling must be a bool, got 1"),
    ],
)
def test_messages_name_the_parameter_the_value_and_what_is_allowed(call, message: str) -> None:  # noqa: ANN001
    with pytest.raises(ValueError) as caught:
        call()
    assert str(caught.value) == message


def test_rules_check_like_the_functions() -> None:
    assert Integer(minimum=1).check("n", 3) == 3
    assert Real(minimum=0.0, maximum=1.0).check("p", 0.5) == 0.5
    assert Choice(("a", "b")).check("c", "b") == "b"
    assert Flag().check("f", False) is False
    assert Mapping().check("m", {"k": 1}) == {"k": 1}
    with pytest.raises(ValueError, match="m must be a JSON object"):
        Mapping().check("m", {1: 2})


def test_optional_real_allows_none_and_says_so() -> None:
    rule = Real(minimum=0.0, open_minimum=True, optional=True)
    assert rule.check("clip", None) is None
    assert rule.check("clip", 10) == 10.0
    with pytest.raises(ValueError, match=r"^clip must be None or a finite number > 0, got -1$"):
        rule.check("clip", -1)


@dataclass(frozen=True, kw_only=True)
class Example:
    count: int = setting(1, "How many.", Integer(minimum=1), label="Count", step=2)
    options: dict = setting({}, "Options.", Mapping())
    free: str = setting("x", "No rule.")

    def __post_init__(self) -> None:
        check_fields(self)


def test_setting_carries_doc_rule_label_and_step_and_check_fields_uses_them() -> None:
    (count, options, free) = dataclasses.fields(Example)
    assert count.metadata == {
        "doc": "How many.",
        "rule": Integer(minimum=1),
        "label": "Count",
        "step": 2,
    }
    assert free.metadata["rule"] is None
    assert Example().options == {} and Example().options is not Example().options
    with pytest.raises(ValueError, match="count must be an integer >= 1, got 0"):
        Example(count=0)


def test_a_choice_must_have_the_same_type() -> None:
    assert check_choice("k", 1, (1, 2)) == 1
    for wrong in (True, 1.0, "1"):
        with pytest.raises(ValueError, match="k must be one of"):
            check_choice("k", wrong, (1, 2))
    assert Choice((None, "a")).check("preset", None) is None


def test_shown_keeps_long_values_to_one_readable_line() -> None:
    assert shown(1.5) == "1.5"
    assert shown("x" * 100) == "'" + "x" * 59 + "... (102 characters)"
    with pytest.raises(ValueError, match=r"got 9{60}\.\.\. \(500 characters\)$"):
        check_integer("n", int("9" * 500), maximum=10)
    with pytest.raises(ValueError, match=r"got 'a{59}\.\.\. \(10,002 characters\)$"):
        check_choice("mode", "a" * 10_000, ("x", "y"))
