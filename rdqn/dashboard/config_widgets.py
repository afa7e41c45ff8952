"""Widgets generated from `RunConfig` fields: one schema for the CLI, the config and the forms.

`config_widget` draws the widget a field's rule calls for, labelled with the field's label, its
help text the field's doc (so a tooltip and ``python -m rdqn train --help`` say the same thing),
and bounded by the field's rule:

    Choice                      select box
    Integer                     number box (whole numbers)
    Real with both bounds       slider, moving by the field's step
    other Real                  number box
    Flag                        checkbox

`FORM_FIELDS` are the run settings the live page's sidebar form edits, with `SEQUENCE_FIELDS` for
a recurrent network; number boxes stop at the server's `rdqn.dashboard.params.LIMITS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamlit.delta_generator import DeltaGenerator

from rdqn.config import config_field
from rdqn.dashboard.params import LIMITS
from rdqn.dashboard.state import shown_value
from rdqn.validation import Choice, Flag, Integer, Real

__all__ = [
    "FORM_FIELDS",
    "SEQUENCE_FIELDS",
    "config_widget",
    "field_help",
    "field_label",
    "form_values",
]

FORM_FIELDS: tuple[str, ...] = (
    "env.id",
    "replay.capacity",
    "replay.batch_size",
    "replay.window",
    "agent.lr",
    "agent.gamma",
    "agent.target_update",
    "train.learning_starts",
    "train.total_steps",
    "train.eval_every",
    "seed",
)
SEQUENCE_FIELDS: tuple[str, ...] = (
    "replay.mode",
    "replay.sequence_length",
    "replay.sequence_overlap",
    "replay.burn_in",
    "replay.priority_eta",
    "replay.stored_state",
)
"""The form's fields of recurrent replay (E14's windows or R2D2's sequences): shown for a
recurrent network only."""


def _maximum(path: str, rule: Integer, value: Any) -> int | None:
    """The number box's top: the rule's, or the server's limit (never below the value shown)."""
    limit = LIMITS.get(path, rule.maximum)
    return None if limit is None else max(limit, int(value))


def field_label(path: str) -> str:
    return str(config_field(path).metadata.get("label") or path)


def field_help(path: str) -> str:
    return str(config_field(path).metadata["doc"])


def config_widget(
    container: DeltaGenerator, path: str, value: Any, *, key: str | None, **options: Any
) -> Any:
    """Draw the widget for config field ``path`` showing ``value``; returns what it holds.

    ``value`` None: a controlled widget, showing what session state holds under ``key`` (set
    there before the widget is drawn), which is its default as well (`shown_value`).
    ``options`` go to the Streamlit widget (``on_change``, ``args``, ``disabled``, ...).
    """
    if value is None:
        if key is None:
            raise ValueError(f"config field {path!r}: a widget without a value needs a key")
        value = shown_value(key)
    item = config_field(path)
    rule = item.metadata["rule"]
    step = item.metadata.get("step")
    common = {"help": field_help(path), "key": key, **options}
    label = field_label(path)
    if isinstance(rule, Choice):
        choices = [choice for choice in rule.options if choice is not None]
        return container.selectbox(label, choices, index=choices.index(value), **common)
    if isinstance(rule, Flag):
        return container.checkbox(label, value=bool(value), **common)
    if isinstance(rule, Integer):
        return container.number_input(
            label,
            min_value=rule.minimum,
            max_value=_maximum(path, rule, value),
            value=int(value),
            step=int(step or 1),
            **common,
        )
    if isinstance(rule, Real) and rule.minimum is not None and rule.maximum is not None:
        return container.slider(
            label, float(rule.minimum), float(rule.maximum), float(value), step or 0.01, **common
        )
    if isinstance(rule, Real):
        return container.number_input(
            label,
            min_value=None if rule.open_minimum else rule.minimum,
            value=float(value),
            step=step,
            format="%g",
            **common,
        )
    raise TypeError(f"no widget for config field {path!r} (rule {rule!r})")


def form_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Widget values as config values (number boxes give floats for whole numbers at times)."""
    out = {}
    for path, value in values.items():
        rule = config_field(path).metadata["rule"]
        out[path] = int(value) if isinstance(rule, Integer) else value
    return out
