"""Dotted paths over a tree of dataclasses: ``"replay.alpha"`` names the leaf field ``alpha`` of
the field ``replay``.

`rdqn.config.RunConfig` is such a tree; this module knows nothing of its fields. A dict from
``dataclasses.asdict`` flattens to ``{path: value}``, builds back with every unknown key named,
and every leaf field is found by its path with its ``metadata`` (doc, rule, label).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import types
import typing
from collections.abc import Set
from dataclasses import fields
from typing import Any

from rdqn.validation import is_integer

__all__ = ["build", "field_at", "flatten", "leaf_docs"]


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, worked out once per class: it evaluates every annotation
    anew on each call, and a page run asks for each of its widgets' fields (read only)."""
    return typing.get_type_hints(cls)


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"replay": {"alpha": 0.6}}`` -> ``{"replay.alpha": 0.6}``; an env's ``kwargs`` mapping
    is one leaf."""
    flat: dict[str, Any] = {}
    for name, value in data.items():
        if isinstance(value, dict) and name != "kwargs":
            flat.update(flatten(value, f"{prefix}{name}."))
        else:
            flat[f"{prefix}{name}"] = value
    return flat


def build(cls: type, data: Any, *, retired: Set[str] = frozenset(), prefix: str = "") -> Any:
    """``cls`` from nested mappings; unknown keys and bad values raise `ValueError` naming the
    path; paths in ``retired`` (fields earlier versions wrote) are dropped."""
    if not isinstance(data, dict):
        raise ValueError(f"{prefix.rstrip('.') or 'config'} must be a mapping, got {data!r}")
    hints = _hints(cls)
    known = {f.name for f in fields(cls)}
    data = {name: value for name, value in data.items() if prefix + name not in retired}
    unknown = sorted(set(data) - known)
    if unknown:
        where = f" in {prefix.rstrip('.')}" if prefix else ""
        raise ValueError(f"unknown config field(s){where}: {', '.join(unknown)}")
    kwargs = {}
    for name, value in data.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            kwargs[name] = build(hint, value, retired=retired, prefix=f"{prefix}{name}.")
        else:
            kwargs[name] = _coerce(hint, value)
    try:
        return cls(**kwargs)
    except ValueError as err:
        raise ValueError(f"{prefix}{err}") from err


def _coerce(hint: Any, value: Any) -> Any:
    """JSON gives ints where floats are declared (e.g. alpha: 1); accept those losslessly."""
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if float in args and is_integer(value):
        try:
            return float(value)
        except OverflowError:  # too large for a float: the field's rule names it
            return value
    return value


def field_at(cls: type, path: str) -> dataclasses.Field[Any]:
    """The leaf field of ``cls`` behind a dotted path; ``ValueError`` for a path that names no
    leaf field (with the closest names, for a typo)."""
    node: Any = cls
    parts = path.split(".")
    for k, part in enumerate(parts):
        found = {f.name: f for f in fields(node)}.get(part)
        if found is None:
            break
        hint = _hints(node)[part]
        if k == len(parts) - 1:
            if dataclasses.is_dataclass(hint):
                names = ", ".join(f"{path}.{f.name}" for f in fields(hint))
                raise ValueError(
                    f"{path!r} is a group of fields, not one field; set one of {names}"
                )
            return found
        if not dataclasses.is_dataclass(hint):
            break
        node = hint
    close = difflib.get_close_matches(path, list(leaf_docs(cls)), n=3)
    hint_text = f"; did you mean {' or '.join(repr(name) for name in close)}?" if close else ""
    raise ValueError(f"unknown config field {path!r}{hint_text}")


def leaf_docs(cls: type, prefix: str = "") -> dict[str, str]:
    """``{"replay.alpha": "Priority exponent: ...", ...}`` for every leaf field of ``cls``."""
    hints = _hints(cls)
    docs: dict[str, str] = {}
    for f in fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            docs.update(leaf_docs(hints[f.name], f"{prefix}{f.name}."))
        else:
            docs[f"{prefix}{f.name}"] = f.metadata.get("doc", "")
    return docs
