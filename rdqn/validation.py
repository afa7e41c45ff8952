"""One set of rules for values that cross a boundary: configs, constructors, the CLI, the dashboard.

Every check raises ``ValueError`` naming the parameter, the value it got and what is allowed::

    >>> check_real("alpha", -1, minimum=0)
    Traceback (most recent call last):
    ValueError: alpha must be a finite number >= 0, got -1

and returns the value as a plain Python ``int`` / ``float``. An *integer* is a Python or NumPy
integer; a *real* is a finite Python or NumPy int or float. Neither is ever a ``bool`` (``True``
is an ``int`` to Python, never a count or a rate to us).

A config field states its rule once, as a constraint object in its metadata (`setting`):
`Integer`, `Real`, `Choice`, `Flag` or `Mapping`. `check_fields` validates a dataclass instance
against its fields' rules, and the dashboard reads the same rules to bound its widgets, so the two
cannot disagree.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

__all__ = [
    "Choice",
    "Flag",
    "Integer",
    "Mapping",
    "Real",
    "Rule",
    "check_choice",
    "check_fields",
    "check_flag",
    "check_integer",
    "check_probability",
    "check_real",
    "is_integer",
    "is_real",
    "parse_count",
    "setting",
    "shown",
]


def shown(value: object, width: int = 60) -> str:
    """``repr(value)`` for an error message, cut to ``width`` characters with the full length
    said: a 400-digit number or a 100,000-character name stays one readable line."""
    text = repr(value)
    if len(text) <= width:
        return text
    return f"{text[:width]}... ({len(text):,} characters)"


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_COUNT = re.compile(r"(\d+(?:_\d+)*)\s*(?:([KMGT])(?:iB|B)?)?", re.IGNORECASE)


def parse_count(name: str, text: str, *, with_unit: bool = False) -> int:
    """A positive integer written as text (an environment variable ``name``): ``2_000_000``;
    with ``with_unit``, a byte count may carry a unit: ``4GiB``, ``512MiB``, ``64K``."""
    match = _COUNT.fullmatch(text.strip())
    if match is None or (match.group(2) and not with_unit):
        unit = " (bytes, or with a unit: 4GiB, 512MiB)" if with_unit else ""
        raise ValueError(f"{name} must be a positive integer{unit}, got {shown(text)}")
    value = int(match.group(1)) * _UNITS[(match.group(2) or "").upper()]
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {shown(text)}")
    return value


def is_integer(value: object) -> bool:
    """A Python or NumPy integer, not a bool."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def is_real(value: object) -> bool:
    """A finite Python or NumPy int or float, not a bool."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
        return False
    try:
        return math.isfinite(value)  # type: ignore[arg-type]
    except (OverflowError, TypeError):
        return False


def _range_text(
    minimum: float | None, maximum: float | None, open_minimum: bool, open_maximum: bool
) -> str:
    if minimum is not None and maximum is not None:
        low, high = "(" if open_minimum else "[", ")" if open_maximum else "]"
        return f"in {low}{minimum:g}, {maximum:g}{high}"
    if minimum is not None:
        return f"{'>' if open_minimum else '>='} {minimum:g}"
    if maximum is not None:
        return f"{'<' if open_maximum else '<='} {maximum:g}"
    return ""


def check_integer(
    name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """``value`` as an ``int``, if it is an integer within ``[minimum, maximum]``."""
    if (
        not is_integer(value)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        bounds = _range_text(minimum, maximum, False, False)
        if minimum is not None and maximum is not None:
            bounds = f"from {minimum:,} to {maximum:,}"
        raise ValueError(f"{name} must be an integer {bounds}".rstrip() + f", got {shown(value)}")
    return int(value)


def check_real(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    open_minimum: bool = False,
    open_maximum: bool = False,
) -> float:
    """``value`` as a ``float``, if it is a finite number within the bounds (closed by default)."""
    ok = is_real(value)
    if ok and minimum is not None:
        ok = value > minimum if open_minimum else value >= minimum
    if ok and maximum is not None:
        ok = value < maximum if open_maximum else value <= maximum
    if not ok:
        bounds = _range_text(minimum, maximum, open_minimum, open_maximum)
        what = (
            f"{name} must be {bounds}"
            if bounds.startswith("in ")
            else f"{name} must be a finite number {bounds}"
        )
        raise ValueError(what.rstrip() + f", got {shown(value)}")
    return float(value)


def check_probability(name: str, value: Any) -> float:
    """``value`` as a ``float`` in [0, 1]."""
    return check_real(name, value, minimum=0.0, maximum=1.0)


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    """``value`` itself, if it is one of ``choices``."""
    # Same type too: True == 1 and 1.0 == 1 to Python, never to a setting.
    if not any(type(value) is type(choice) and value == choice for choice in choices):
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {shown(value)}")
    return value


def check_flag(name: str, value: Any) -> bool:
    """``value``, if it is a bool."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {shown(value)}")
    return value


# ------------------------------------------------------------------------- field rules
class Rule(Protocol):
    """What a config field allows; ``check`` raises ``ValueError`` naming ``name`` otherwise."""

    def check(self, name: str, value: Any) -> Any: ...


@dataclass(frozen=True)
class Integer:
    """An integer in ``[minimum, maximum]`` (either bound may be open-ended: ``None``)."""

    minimum: int | None = None
    maximum: int | None = None

    def check(self, name: str, value: Any) -> int:
        return check_integer(name, value, minimum=self.minimum, maximum=self.maximum)


@dataclass(frozen=True)
class Real:
    """A finite number within the bounds; ``optional`` also allows ``None`` (e.g. "no clip")."""

    minimum: float | None = None
    maximum: float | None = None
    open_minimum: bool = False
    open_maximum: bool = False
    optional: bool = False

    def check(self, name: str, value: Any) -> float | None:
        if value is None and self.optional:
            return None
        try:
            return check_real(
                name,
                value,
                minimum=self.minimum,
                maximum=self.maximum,
                open_minimum=self.open_minimum,
                open_maximum=self.open_maximum,
            )
        except ValueError as err:
            if not self.optional:
                raise
            raise ValueError(str(err).replace(" must be ", " must be None or ", 1)) from None


@dataclass(frozen=True)
class Choice:
    """One of ``options``."""

    options: tuple[Any, ...]

    def check(self, name: str, value: Any) -> Any:
        return check_choice(name, value, self.options)


@dataclass(frozen=True)
class Flag:
    """A bool."""

    def check(self, name: str, value: Any) -> bool:
        return check_flag(name, value)


@dataclass(frozen=True)
class Mapping:
    """A dict with string keys (a JSON object)."""

    def check(self, name: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
            raise ValueError(f"{name} must be a JSON object (string keys), got {shown(value)}")
        return value


def setting(
    default: Any,
    doc: str,
    rule: Rule | None = None,
    *,
    label: str | None = None,
    step: float | None = None,
) -> Any:
    """A dataclass field that states its one-line documentation, its rule and how to show it.

    The doc is the CLI's ``--help`` text and the dashboard's tooltip; the rule validates the value
    (`check_fields`) and bounds its widget; the label names it on forms, and ``step`` is the
    increment of its slider or number box.
    """
    metadata = {"doc": doc, "rule": rule, "label": label, "step": step}
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def check_fields(instance: Any) -> None:
    """Check every field of a dataclass instance against the rule in its metadata."""
    for item in dataclasses.fields(instance):
        rule = item.metadata.get("rule")
        if rule is not None:
            rule.check(item.name, getattr(instance, item.name))
