"""Typed, validated run configuration and the named presets.

A `RunConfig` composes one frozen dataclass per concept: `EnvConfig`, `ReplayConfig`,
`AgentConfig` (in `rdqn.agent_config`) and `TrainConfig`. Every field carries a one-line doc in
`metadata["doc"]`, which feeds the CLI's `--help` and the dashboard's tooltips. Validation
happens in `__post_init__` and names the field, the value and what is allowed. Edit a config with
`dataclasses.replace` or with dotted overrides: `config.with_overrides({"replay.alpha": 0.7})`.

Presets (DESIGN "Presets"):

| preset | net | replay | target |
|---|---|---|---|
| e14 | recurrent | proportional alpha .6, beta .4 -> 1 | soft, tau .005 |
| e15 | recurrent | uniform, bounded FIFO | hard sync |
| per-notebook | MLP 64-64 | proportional alpha .6, beta .4 -> 1 | hard sync |
| paper | linear (tabular), SGD | proportional alpha .6 (rank-based alpha .7), beta .5 | none |

The `paper` preset is tabular Q-learning as in the paper's Blind Cliffwalk: a bias-free linear
net on one-hot states, plain SGD, and the target copied after every update (no target network).
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any

from rdqn.agent_config import AgentConfig
from rdqn.envs import ENV_IDS

__all__ = [
    "PRESETS",
    "SCHEMES",
    "AgentConfig",
    "EnvConfig",
    "ReplayConfig",
    "RunConfig",
    "TrainConfig",
    "field_docs",
    "preset",
]

SCHEMES: tuple[str, ...] = ("uniform", "proportional", "rank")
IS_NORMALIZATIONS: tuple[str, ...] = ("global", "batch", "none")


def _doc(default: Any, doc: str, **extra: Any) -> Any:
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata={"doc": doc, **extra})
    return field(default=default, metadata={"doc": doc, **extra})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_choices(obj: Any) -> None:
    for f in fields(obj):
        choices = f.metadata.get("choices")
        if choices is not None and getattr(obj, f.name) not in choices:
            raise ValueError(f"{f.name} must be one of {choices}, got {getattr(obj, f.name)!r}")


def _check_int(name: str, value: Any, minimum: int) -> None:
    if not _is_int(value) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _check_unit(name: str, value: Any) -> None:
    if not (_is_real(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")


@dataclass(frozen=True, kw_only=True)
class EnvConfig:
    """Which environment to train on."""

    id: str = _doc("CartPole-v1", "Environment id.", choices=ENV_IDS)
    kwargs: dict[str, Any] = _doc({}, "Extra keyword arguments for the environment (JSON).")

    def __post_init__(self) -> None:
        _check_choices(self)
        if not isinstance(self.kwargs, dict):
            raise ValueError(f"kwargs must be a dict, got {self.kwargs!r}")


@dataclass(frozen=True, kw_only=True)
class ReplayConfig:
    """Replay memory and its sampling scheme."""

    scheme: str = _doc(
        "proportional",
        "Sampling scheme: uniform, proportional PER or rank-based PER.",
        choices=SCHEMES,
    )
    capacity: int = _doc(50_000, "Transitions kept (FIFO: the oldest is overwritten).")
    batch_size: int = _doc(128, "Transitions per learner update.")
    window: int = _doc(8, "Observations per window T fed to the network (1 = no memory).")
    alpha: float = _doc(0.6, "Priority exponent: 0 = uniform, 1 = fully proportional.")
    eps: float = _doc(1e-6, "Added to |TD error| so no transition has zero priority.")
    beta0: float = _doc(0.4, "Initial IS-correction exponent, annealed linearly to beta_end.")
    beta_end: float = _doc(1.0, "Final IS-correction exponent (1 = full correction).")
    is_normalization: str = _doc(
        "global",
        "IS weight normalisation: global max (paper), batch max (E14 notebook) or none.",
        choices=IS_NORMALIZATIONS,
    )
    max_weight: float | None = _doc(None, "Upper clip of the IS weights (None: no clip).")
    rank_sort_every: int = _doc(64, "Rank-based: re-sort priorities every K updates/additions.")

    def __post_init__(self) -> None:
        _check_choices(self)
        _check_int("capacity", self.capacity, 1)
        _check_int("batch_size", self.batch_size, 1)
        _check_int("window", self.window, 1)
        _check_int("rank_sort_every", self.rank_sort_every, 1)
        if self.batch_size > self.capacity:
            raise ValueError(
                f"batch_size must be <= capacity ({self.capacity}), got {self.batch_size}"
            )
        if not (_is_real(self.alpha) and self.alpha >= 0):
            raise ValueError(f"alpha must be a finite number >= 0, got {self.alpha!r}")
        if not (_is_real(self.eps) and self.eps >= 0):
            raise ValueError(f"eps must be a finite number >= 0, got {self.eps!r}")
        _check_unit("beta0", self.beta0)
        _check_unit("beta_end", self.beta_end)
        if self.max_weight is not None and not (_is_real(self.max_weight) and self.max_weight > 0):
            raise ValueError(f"max_weight must be None or > 0, got {self.max_weight!r}")


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """The training loop's budget and schedules."""

    total_steps: int = _doc(20_000, "Environment steps to train for (the budget).")
    learning_starts: int = _doc(1_000, "Environment steps collected before the first update.")
    train_every: int = _doc(1, "Environment steps per learner update.")
    epsilon_start: float = _doc(1.0, "Initial exploration rate of epsilon-greedy.")
    epsilon_end: float = _doc(0.05, "Final exploration rate.")
    epsilon_fraction: float = _doc(
        0.25, "Fraction of the budget over which epsilon decays linearly."
    )
    log_every: int = _doc(10, "Record loss and TD-error statistics every K updates.")
    histogram_every: int = _doc(
        200, "Record priority and IS-weight histograms (heatmaps) every K updates."
    )

    def __post_init__(self) -> None:
        _check_int("total_steps", self.total_steps, 1)
        _check_int("learning_starts", self.learning_starts, 0)
        _check_int("train_every", self.train_every, 1)
        _check_int("log_every", self.log_every, 1)
        _check_int("histogram_every", self.histogram_every, 1)
        _check_unit("epsilon_start", self.epsilon_start)
        _check_unit("epsilon_end", self.epsilon_end)
        _check_unit("epsilon_fraction", self.epsilon_fraction)

    @property
    def planned_updates(self) -> int:
        """Learner updates the budget allows: beta reaches beta_end after these."""
        return max(0, (self.total_steps - self.learning_starts) // self.train_every)


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything that defines a run; `RunConfig()` is a working default (per-notebook)."""

    preset: str | None = _doc(None, "Name of the preset this config started from.")
    seed: int = _doc(0, "Seed of every random stream in the run (env, replay, agent).")
    env: EnvConfig = field(default_factory=EnvConfig, metadata={"doc": "Environment."})
    replay: ReplayConfig = field(
        default_factory=lambda: ReplayConfig(capacity=10_000, batch_size=32, window=1),
        metadata={"doc": "Replay memory."},
    )
    agent: AgentConfig = field(
        default_factory=lambda: AgentConfig(
            network="mlp", target_update="hard", target_sync_every=500
        ),
        metadata={"doc": "Learner."},
    )
    train: TrainConfig = field(default_factory=TrainConfig, metadata={"doc": "Training loop."})

    def __post_init__(self) -> None:
        _check_int("seed", self.seed, 0)
        if self.train.learning_starts < self.replay.batch_size:
            raise ValueError(
                f"train.learning_starts must be >= replay.batch_size ({self.replay.batch_size}), "
                f"got {self.train.learning_starts}"
            )
        if self.agent.network != "recurrent" and self.replay.window != 1:
            raise ValueError(
                f"replay.window must be 1 for the {self.agent.network} network "
                f"(only the recurrent network reads windows), got {self.replay.window}"
            )

    # ------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def record_fields(self) -> dict[str, Any]:
        """What `RunStore.create_run` files a run under: the config and its key columns."""
        return {
            "config": self.to_dict(),
            "preset": self.preset,
            "env_id": self.env.id,
            "scheme": self.replay.scheme,
            "seed": self.seed,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """Build from `to_dict()` output; unknown keys and bad values raise `ValueError`."""
        return _from_dict(cls, data, "")

    @classmethod
    def from_json(cls, text: str) -> RunConfig:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"config is not valid JSON: {err}") from err
        if not isinstance(data, dict):
            raise ValueError(f"config JSON must be an object, got {type(data).__name__}")
        return cls.from_dict(data)

    def with_overrides(self, overrides: dict[str, Any]) -> RunConfig:
        """A copy with dotted-path fields replaced, e.g. `{"replay.alpha": 0.7, "seed": 3}`."""
        data = self.to_dict()
        for path, value in overrides.items():
            node = data
            parts = path.split(".")
            for part in parts[:-1]:
                if not isinstance(node.get(part), dict):
                    raise ValueError(f"unknown config field {path!r}")
                node = node[part]
            if parts[-1] not in node:
                raise ValueError(f"unknown config field {path!r}")
            node[parts[-1]] = value
        return RunConfig.from_dict(data)


def _from_dict(cls: type, data: Any, prefix: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"{prefix or 'config'} must be a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        where = f" in {prefix.rstrip('.')}" if prefix else ""
        raise ValueError(f"unknown config field(s){where}: {', '.join(unknown)}")
    kwargs = {}
    for name, value in data.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            kwargs[name] = _from_dict(hint, value, f"{prefix}{name}.")
        else:
            kwargs[name] = _coerce(hint, value)
    try:
        return cls(**kwargs)
    except ValueError as err:
        raise ValueError(f"{prefix}{err}") from err


def _coerce(hint: Any, value: Any) -> Any:
    """JSON gives ints where floats are declared (e.g. alpha: 1); accept those losslessly."""
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if float in args and _is_int(value):
        return float(value)
    return value


def field_docs(cls: type = RunConfig, prefix: str = "") -> dict[str, str]:
    """`{"replay.alpha": "Priority exponent: ...", ...}` for every leaf field."""
    hints = typing.get_type_hints(cls)
    docs: dict[str, str] = {}
    for f in fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            docs.update(field_docs(hints[f.name], f"{prefix}{f.name}."))
        else:
            docs[f"{prefix}{f.name}"] = f.metadata.get("doc", "")
    return docs


def _e14() -> RunConfig:
    return RunConfig(
        preset="e14",
        env=EnvConfig(id="rdqn/MaskedCartPole-v0"),
        replay=ReplayConfig(scheme="proportional", capacity=50_000, batch_size=128, window=8),
        agent=AgentConfig(network="recurrent", target_update="soft", tau=0.005),
        train=TrainConfig(total_steps=50_000, learning_starts=1_000),
    )


def _e15() -> RunConfig:
    return RunConfig(
        preset="e15",
        env=EnvConfig(id="rdqn/SyntheticMarket-v0"),
        replay=ReplayConfig(scheme="uniform", capacity=50_000, batch_size=128, window=8),
        agent=AgentConfig(network="recurrent", target_update="hard", target_sync_every=1_000),
        train=TrainConfig(total_steps=50_000, learning_starts=1_000),
    )


def _per_notebook() -> RunConfig:
    # Plain DQN, as in the notebook (it leaves out Double DQN to isolate PER's effect), with a
    # short, low exploration schedule; a sweep of learning rate, target period and Double DQN is
    # in the README ("CartPole-v1 with the per-notebook preset").
    return RunConfig(
        preset="per-notebook",
        env=EnvConfig(id="CartPole-v1"),
        replay=ReplayConfig(scheme="proportional", capacity=10_000, batch_size=32, window=1),
        agent=AgentConfig(network="mlp", target_update="hard", target_sync_every=500),
        train=TrainConfig(
            total_steps=100_000, learning_starts=1_000, epsilon_end=0.01, epsilon_fraction=0.1
        ),
    )


def _paper() -> RunConfig:
    return RunConfig(
        preset="paper",
        env=EnvConfig(id="rdqn/BlindCliffwalk-v0", kwargs={"n": 8}),
        replay=ReplayConfig(
            scheme="proportional", capacity=10_000, batch_size=32, window=1, alpha=0.6, beta0=0.5
        ),
        agent=AgentConfig(
            network="linear",
            optimizer="sgd",
            lr=0.25,
            gamma=0.99,
            loss="mse",
            target_update="hard",
            target_sync_every=1,
            grad_clip_norm=None,
        ),
        train=TrainConfig(total_steps=5_000, learning_starts=100),
    )


PRESETS: dict[str, Any] = {
    "e14": _e14,
    "e15": _e15,
    "per-notebook": _per_notebook,
    "paper": _paper,
}
"""Preset name -> factory of its `RunConfig`."""


def preset(name: str) -> RunConfig:
    """The `RunConfig` of a named preset (`ValueError` naming the allowed names otherwise)."""
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {tuple(PRESETS)}, got {name!r}")
    return PRESETS[name]()
