"""A sweep: a grid over config fields, times seeds, on a preset; checked whole before any run.

    spec = SweepSpec.from_grid(
        "paper", {"replay.alpha": [0, 0.4, 0.6, 0.8, 1], "replay.scheme": ["proportional", "rank"]},
        seeds=5,
    )
    spec.trials()  # 5 x 2 cells x 5 seeds = 50 Trial(key, overrides, seed), seed-major

A *cell* is one value per grid field; a *trial* is a cell on one seed, and trains one recorded
run: `configure(preset, overrides | cell | {"seed": seed, "train.total_steps": steps})`
(`rdqn.presets.configure`: a ``steps`` budget caps the warm-up at a tenth of it, as ``--steps``
does). Grid fields are any dotted config field `configure` accepts but ``seed`` (``seeds``) and
``preset``.

Checked at construction, each fault one `GridError` (a ``ValueError``) naming the entry: an
unknown field (with the closest names), a value the field refuses (the config's own rule says
what it allows), an empty list, a value or a field given twice, a field both in the grid and in
the fixed overrides, a cell whose values refuse each other (``replay.batch_size`` above
``replay.capacity``), a config past the server's limits (`rdqn.limits`), an env its options
cannot build, and more than `MAX_TRIALS` trials.

Identity: values are compared as the config holds them (``1`` and ``1.0`` are one alpha), and
the sweep id is a digest of the trials' set (preset, fixed overrides, steps, each field's set of
values, the set of seeds), so the same sweep asked for again (fields or values in another order
too) has the same id and its finished trials are not run again. A trial's key names its cell and
seed, fields sorted: ``replay.alpha=0.6 replay.scheme="rank" seed=3``; `trial_key` computes it
from a stored run's config, which is how a resumed sweep knows which trials are done.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rdqn.config import RunConfig, config_field
from rdqn.envs import make_env
from rdqn.limits import check_limits
from rdqn.presets import PRESETS, configure
from rdqn.validation import is_integer, shown

__all__ = [
    "MAX_TRIALS",
    "GridError",
    "SweepSpec",
    "Trial",
    "grid_from_items",
    "parse_grid_item",
    "trial_key",
]

MAX_TRIALS = 10_000
"""The most trials one sweep may hold (each is a row in the run store)."""
_NOT_IN_GRID = {
    "seed": "the seeds are set with seeds (--seeds N or --seeds 0 3 7)",
    "preset": "a sweep is on one preset (--preset NAME)",
}
_TOML_KEYS = ("preset", "seeds", "steps", "grid", "overrides")
SWEEP_FILE_MAX_BYTES = 1024 * 1024
"""The most of a sweep file read: a grid of `MAX_TRIALS` trials fits in a few kB."""
_MAX_SEED = 2**31 - 1


class GridError(ValueError):
    """A sweep that cannot run as asked; the message names the entry and what is allowed."""


@dataclass(frozen=True)
class Trial:
    """One run of a sweep: a grid cell on one seed."""

    key: str
    """Stable name of the trial: its cell's fields (sorted) and its seed."""
    overrides: dict[str, Any] = field(hash=False)
    """The cell: one value per grid field, by dotted field name."""
    seed: int

    @property
    def cell(self) -> str:
        """The key of the trial's cell (its key without the seed)."""
        return cell_key(self.overrides)


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def cell_key(cell: Mapping[str, Any]) -> str:
    """``replay.alpha=0.6 replay.scheme="rank"``: a cell's fields, sorted, values as JSON."""
    return " ".join(f"{name}={_text(cell[name])}" for name in sorted(cell))


def trial_key(cell: Mapping[str, Any], seed: int) -> str:
    """A trial's key: its cell's key and ``seed=N``."""
    return " ".join(filter(None, [cell_key(cell), f"seed={int(seed)}"]))


def parse_grid_item(item: str) -> tuple[str, list[Any]]:
    """``KEY=V1,V2,...`` (``--grid``) as the field and its values. The values are read as one
    JSON list when they are one (numbers, ``true``, ``null``, quoted strings, ``{"n": 8}``
    objects), else split at the commas, each JSON or a bare word (``proportional,rank``)."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise GridError(f"--grid expects KEY=V1,V2,..., got {shown(item)}")
    try:
        values = json.loads(f"[{raw}]")
    except ValueError:
        values = []
        for part in raw.split(","):
            text = part.strip()
            if not text:
                raise GridError(f"--grid {key}={raw}: an empty value between commas") from None
            try:
                values.append(json.loads(text))
            except ValueError:
                values.append(text)
    if not isinstance(values, list):  # pragma: no cover - a JSON array is always a list
        raise GridError(f"--grid {shown(item)}: not a list of values")
    return key, values


def grid_from_items(items: Sequence[str]) -> dict[str, list[Any]]:
    """Repeated ``--grid KEY=V1,V2,...`` items as a grid; a field given twice is refused."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, values = parse_grid_item(item)
        if key in grid:
            raise GridError(f"--grid {key}: given twice; list all its values in one --grid")
        grid[key] = values
    return grid


def _seeds(seeds: int | Iterable[int]) -> tuple[int, ...]:
    if is_integer(seeds):
        count = int(seeds)  # type: ignore[arg-type]
        if not 1 <= count <= MAX_TRIALS:
            raise GridError(f"seeds must be a count from 1 to {MAX_TRIALS:,}, got {count}")
        return tuple(range(count))
    if isinstance(seeds, str | bytes) or not isinstance(seeds, Iterable):
        raise GridError(f"seeds must be a count or a list of seeds, got {shown(seeds)}")
    listed = list(seeds)
    if not listed:
        raise GridError("seeds must name at least one seed, got none")
    for seed in listed:
        if not is_integer(seed) or not 0 <= seed <= _MAX_SEED:
            raise GridError(
                f"every seed must be an integer from 0 to {_MAX_SEED}, got {shown(seed)}"
            )
    if len(set(listed)) != len(listed):
        raise GridError(f"seeds must not repeat a seed, got {shown(listed)}")
    return tuple(int(seed) for seed in listed)


def _steps(steps: Any) -> int | None:
    if steps is None:
        return None
    if not is_integer(steps) or steps < 1:
        raise GridError(f"steps must be a whole number of env steps >= 1, got {shown(steps)}")
    return int(steps)


def _check_field(name: Any, where: str) -> str:
    if not isinstance(name, str) or not name:
        raise GridError(
            f"{where}: a field must be a dotted name such as replay.alpha, got {shown(name)}"
        )
    if name in _NOT_IN_GRID:
        raise GridError(f"{where} {name}: not a grid field: {_NOT_IN_GRID[name]}")
    try:
        config_field(name)
    except ValueError as err:
        raise GridError(f"{where} {name}: {err}") from None
    return name


@dataclass(frozen=True)
class SweepSpec:
    """A sweep, validated whole at construction (see the module docstring); build one with
    `from_grid`, `from_toml` or `from_dict`."""

    preset: str
    grid: dict[str, tuple[Any, ...]] = field(hash=False)
    """Grid field -> its values (as the config holds them), in the order given."""
    seeds: tuple[int, ...]
    steps: int | None = None
    """Env steps per trial (None: the preset's budget)."""
    overrides: dict[str, Any] = field(default_factory=dict, hash=False)
    """Fields set the same in every trial (``--set``)."""

    @classmethod
    def from_grid(
        cls,
        preset: str,
        grid: Mapping[str, Sequence[Any]],
        seeds: int | Iterable[int],
        steps: int | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
    ) -> SweepSpec:
        """A sweep of ``grid`` (field -> values) on ``preset``; ``seeds`` is a count (seeds 0 to
        n - 1) or the seeds; ``steps`` the env steps per trial (None: the preset's)."""
        if preset not in PRESETS:
            raise GridError(f"preset must be one of {', '.join(PRESETS)}, got {shown(preset)}")
        if not isinstance(grid, Mapping):
            raise GridError(f"grid must map fields to lists of values, got {shown(grid)}")
        fixed = dict(overrides or {})
        for name in fixed:
            _check_field(name, "override")
        budget = _steps(steps)
        base = {**fixed, **({"train.total_steps": budget} if budget is not None else {})}
        checked: dict[str, tuple[Any, ...]] = {}
        for name, values in grid.items():
            _check_field(name, "grid entry")
            if name in fixed:
                raise GridError(f"grid entry {name}: also set as a fixed override; keep one")
            if name == "train.total_steps" and budget is not None:
                raise GridError(f"grid entry {name}: the budget is also set by steps; keep one")
            checked[name] = _values(preset, name, values, base)
        spec = cls(preset, checked, _seeds(seeds), budget, fixed)
        spec._check_cells()
        return spec

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> SweepSpec:
        """A sweep from a TOML file (docs/sweeps.md)::

        preset = "chain-lesson"
        seeds = 5                 # a count, or a list: [0, 3, 7]
        steps = 3000              # optional: env steps per trial
        [grid]
        "replay.alpha" = [0.0, 0.4, 0.6, 0.8, 1.0]
        replay.scheme = ["proportional", "rank"]
        [overrides]               # optional: set in every trial
        "agent.lr" = 0.05
        """
        where = Path(path)
        try:
            with where.open("rb") as file:  # a sweep file is small; /dev/zero is not
                raw = file.read(SWEEP_FILE_MAX_BYTES + 1)
            if len(raw) > SWEEP_FILE_MAX_BYTES:
                raise GridError(
                    f"sweep file {where} is larger than {SWEEP_FILE_MAX_BYTES // 1024} kB: "
                    "not a sweep file"
                )
            data = tomllib.loads(raw.decode("utf-8"))
        except OSError as err:
            raise GridError(f"sweep file {where} cannot be read: {err.strerror or err}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
            raise GridError(f"sweep file {where} is not valid TOML: {err}") from None
        unknown = sorted(set(data) - set(_TOML_KEYS))
        if unknown:
            raise GridError(
                f"sweep file {where}: unknown key(s) {', '.join(unknown)}; a sweep file holds "
                f"{', '.join(_TOML_KEYS)}"
            )
        for required in ("preset", "seeds"):
            if required not in data:
                raise GridError(f"sweep file {where}: no {required} = ...")
        try:
            grid = _flatten(data.get("grid", {}), "grid")
            fixed = _flatten(data.get("overrides", {}), "overrides")
            return cls.from_dict({**data, "grid": grid, "overrides": fixed})
        except GridError as err:
            raise GridError(f"sweep file {where}: {err}") from None

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON-ready data (`from_dict` reads it back)."""
        return {
            "preset": self.preset,
            "grid": {name: list(values) for name, values in self.grid.items()},
            "seeds": list(self.seeds),
            "steps": self.steps,
            "overrides": dict(self.overrides),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepSpec:
        """A spec from `to_dict` output, checked again."""
        unknown = sorted(set(data) - set(_TOML_KEYS))
        if unknown or "preset" not in data or "seeds" not in data:
            raise GridError(f"not a sweep spec: {shown(dict(data))}")
        return cls.from_grid(
            data["preset"],
            data.get("grid", {}),
            data["seeds"],
            data.get("steps"),
            overrides=data.get("overrides"),
        )

    # ------------------------------------------------------------------------ trials
    @property
    def id(self) -> str:
        """12 hex digits of a digest of the trials' set (see the module docstring)."""
        canonical = {
            "preset": self.preset,
            "grid": {name: sorted(map(_text, values)) for name, values in self.grid.items()},
            "seeds": sorted(self.seeds),
            "steps": self.steps,
            "overrides": self.overrides,
        }
        return hashlib.sha256(_text(canonical).encode()).hexdigest()[:12]

    def cells(self) -> list[dict[str, Any]]:
        """Every grid cell (one value per field), the last field varying fastest."""
        names = list(self.grid)
        return [
            dict(zip(names, values, strict=True))
            for values in itertools.product(*self.grid.values())
        ]

    def trials(self) -> list[Trial]:
        """Every trial, seed-major (each seed's lap covers every cell, so a sweep cut short
        has seen every cell), in a fixed order."""
        cells = self.cells()
        return [Trial(trial_key(cell, seed), cell, seed) for seed in self.seeds for cell in cells]

    def config(self, trial: Trial) -> RunConfig:
        """The run config of ``trial``."""
        return self._config(trial.overrides, trial.seed)

    def _config(self, cell: Mapping[str, Any], seed: int) -> RunConfig:
        values: dict[str, Any] = {**self.overrides, **cell, "seed": seed}
        if self.steps is not None:
            values["train.total_steps"] = self.steps
        return configure(self.preset, values)

    def key_of(self, config: RunConfig) -> str:
        """The key of the trial a run of this config is (its grid fields and seed)."""
        return trial_key({name: config.get(name) for name in self.grid}, config.seed)

    def _check_cells(self) -> None:
        """Every cell builds a config within the limits, and each distinct env builds."""
        count = len(self.seeds) * len(self.cells())
        if count > MAX_TRIALS:
            raise GridError(
                f"the sweep has {count:,} trials (cells x seeds), more than {MAX_TRIALS:,}: "
                "split it"
            )
        envs: set[str] = set()
        for cell in self.cells():
            try:
                config = self._config(cell, self.seeds[0])
                check_limits(config)
                env = _text([config.env.id, config.env.kwargs])
                if env not in envs:
                    envs.add(env)
                    make_env(config.env.id, **config.env.kwargs).close()
            except ValueError as err:
                raise GridError(f"grid cell {cell_key(cell) or '(no grid)'}: {err}") from None


def _values(preset: str, name: str, values: Any, base: Mapping[str, Any]) -> tuple[Any, ...]:
    """``values`` of grid field ``name`` as the config holds them, each checked by it."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise GridError(f"grid entry {name}: expected a list of values, got {shown(values)}")
    listed = list(values)
    if not listed:
        raise GridError(f"grid entry {name}: an empty list; give at least one value")
    held: list[Any] = []
    for value in listed:
        try:
            held.append(configure(preset, {**base, name: value}).get(name))
        except ValueError as err:
            raise GridError(f"grid entry {name}={_shown_value(value)}: {err}") from None
    texts = [_text(value) for value in held]
    repeated = sorted({text for text in texts if texts.count(text) > 1})
    if repeated:
        raise GridError(f"grid entry {name}: the value {repeated[0]} is given twice")
    return tuple(held)


def _shown_value(value: Any) -> str:
    try:
        return shown(_text(value)).strip("'")
    except (TypeError, ValueError):
        return shown(value)


def _is_leaf(path: str) -> bool:
    try:
        config_field(path)
    except ValueError:
        return False
    return True


def _flatten(table: Any, where: str, prefix: str = "") -> dict[str, Any]:
    """A TOML table of fields (``"replay.alpha" = ...`` or ``[grid.replay] alpha = ...``) as
    dotted names; a field given both ways is refused."""
    if not isinstance(table, dict):
        raise GridError(f"[{where}] must be a table of fields, got {shown(table)}")
    flat: dict[str, Any] = {}
    for name, value in table.items():
        path = f"{prefix}{name}"
        if isinstance(value, dict) and not _is_leaf(path):
            found = _flatten(value, where, f"{path}.")
        else:
            found = {path: value}
        for key, item in found.items():
            if key in flat:
                raise GridError(f"[{where}] {key}: given twice")
            flat[key] = item
    return flat
