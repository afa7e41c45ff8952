"""Typed, validated run configuration.

A `RunConfig` composes one frozen dataclass per concept: `EnvConfig`, `ReplayConfig`,
`AgentConfig` (in `rdqn.learn.agent_config`) and `TrainConfig`. Every field is declared with
`rdqn.validation.setting`: a one-line doc (the CLI's ``--help`` and the dashboard's tooltips), a
rule (what values are allowed; checked in ``__post_init__``, and the dashboard's widget bounds)
and a short label. Errors name the field, the value and what is allowed. Edit a config with
`dataclasses.replace` or with dotted overrides: ``config.with_overrides({"replay.alpha": 0.7})``.
The named presets are in `rdqn.presets`.
"""

from __future__ import annotations

import collections.abc
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from rdqn import config_paths
from rdqn.envs import ENV_IDS
from rdqn.envs.minatar import MINATAR_ENVS
from rdqn.learn.agent_config import AgentConfig
from rdqn.schemes import SCHEMES
from rdqn.validation import (
    Choice,
    Flag,
    Integer,
    Mapping,
    Real,
    check_fields,
    is_integer,
    setting,
    shown,
)

__all__ = [
    "PRESET_NAMES",
    "REPLAY_MODES",
    "RETIRED_FIELDS",
    "RETURN_WINDOW",
    "SCHEMES",
    "AgentConfig",
    "EnvConfig",
    "ReplayConfig",
    "RunConfig",
    "TrainConfig",
    "config_field",
    "field_docs",
]

IS_NORMALIZATIONS: tuple[str, ...] = ("global", "batch", "none")
REPLAY_MODES: tuple[str, ...] = ("windows", "sequences")
"""What replay hands the learner: windows of T observations, each read from a zero state (E14),
or R2D2's sequences of steps read from the state recorded while acting (Kapturowski et al.
2019; `rdqn.replay.SequenceReplay`)."""
PRESET_NAMES: tuple[str, ...] = (
    "e14",
    "e14-lesson",
    "e15",
    "per-notebook",
    "paper",
    "chain-lesson",
    "demo",
    "minatar",
)
"""The presets of `rdqn.presets`, in the order the CLI and the dashboard list them."""
RETURN_WINDOW = 20
"""Episodes in the mean return that ``train.stop_at_return`` reads (the same 20 as the curves'
rolling mean, `rdqn.compare.ROLLING_WINDOW`)."""

_UNIT = Real(minimum=0.0, maximum=1.0)
_COUNT = Integer(minimum=1)


@dataclass(frozen=True, kw_only=True)
class EnvConfig:
    """Which environment to train on."""

    id: str = setting("CartPole-v1", "Environment id.", Choice(ENV_IDS), label="Environment")
    kwargs: dict[str, Any] = setting(
        {}, "Extra keyword arguments for the environment (JSON).", Mapping(), label="Env options"
    )

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True, kw_only=True)
class ReplayConfig:
    """Replay memory and its sampling scheme."""

    scheme: str = setting(
        "proportional",
        "Sampling scheme: uniform, proportional PER or rank-based PER.",
        Choice(SCHEMES),
        label="Replay scheme",
    )
    capacity: int = setting(
        50_000,
        "Transitions kept (FIFO: the oldest is overwritten).",
        _COUNT,
        label="Capacity",
        step=1000,
    )
    batch_size: int = setting(128, "Transitions per learner update.", _COUNT, label="Batch size")
    window: int = setting(
        8,
        "Observations per window T fed to the network (1 = no memory).",
        _COUNT,
        label="Window T",
    )
    alpha: float = setting(
        0.6,
        "Priority exponent: 0 = uniform replay, 1 = fully proportional to |TD error|.",
        _UNIT,
        label="α (prioritization)",
        step=0.05,
    )
    eps: float = setting(
        1e-6,
        "Added to |TD error| so no transition has zero priority (> 0: with 0, TD errors that all "
        "reach 0 leave nothing to sample).",
        Real(minimum=0.0, open_minimum=True),
        label="Priority offset",
    )
    beta0: float = setting(
        0.4,
        "Initial IS-correction exponent, annealed linearly to the final β: "
        "0 = no correction, 1 = full correction.",
        _UNIT,
        label="β₀ (IS correction at the start)",
        step=0.05,
    )
    beta_end: float = setting(
        1.0, "Final IS-correction exponent (1 = full correction).", _UNIT, label="Final β"
    )
    is_normalization: str = setting(
        "global",
        "IS weight normalisation: global max (paper), batch max (E14 notebook) or none.",
        Choice(IS_NORMALIZATIONS),
        label="IS weight normalisation",
    )
    max_weight: float | None = setting(
        None,
        "Upper clip of the IS weights (None: no clip).",
        Real(minimum=0.0, open_minimum=True, optional=True),
        label="IS weight clip",
    )
    mode: str = setting(
        "windows",
        "What is replayed: windows of T observations, each read from a zero state (E14), or "
        "R2D2's sequences of steps, read from the LSTM state recorded while acting (recurrent "
        "network only; its batch is then of sequences, and β = 0 turns IS weights off as R2D2).",
        Choice(REPLAY_MODES),
        label="Replay mode",
    )
    sequence_length: int = setting(
        40,
        "Steps m of a replayed sequence (sequences mode; an episode's last may be shorter).",
        _COUNT,
        label="Sequence length",
    )
    sequence_overlap: int = setting(
        20,
        "Steps two adjacent sequences of an episode share (sequences mode): a sequence starts "
        "every m - overlap steps.",
        Integer(minimum=0),
        label="Sequence overlap",
    )
    burn_in: int = setting(
        20,
        "First steps of a replayed sequence that only bring its LSTM state up to date, without "
        "loss (sequences mode; none where the sequence begins its episode); at most the overlap, "
        "so every step is learned from.",
        Integer(minimum=0),
        label="Burn-in",
    )
    priority_eta: float = setting(
        0.9,
        "A sequence's |TD error|: η max + (1 - η) mean over its learned steps (sequences mode; "
        "R2D2: 0.9).",
        _UNIT,
        label="η (sequence priority)",
        step=0.05,
    )
    stored_state: bool = setting(
        True,
        "Start a replayed sequence from the LSTM state recorded while acting (R2D2's stored "
        "state); off: from zeros (sequences mode).",
        Flag(),
        label="Stored state",
    )

    def __post_init__(self) -> None:
        check_fields(self)
        if self.batch_size > self.capacity:
            raise ValueError(
                f"batch_size must be <= capacity ({self.capacity}), got {self.batch_size}"
            )
        if self.mode == "sequences":
            self._check_sequences()

    def _check_sequences(self) -> None:
        m = self.sequence_length
        if self.sequence_overlap >= m:
            raise ValueError(
                f"sequence_overlap must be below sequence_length ({m}), got "
                f"{self.sequence_overlap}: sequences start every sequence_length - overlap steps"
            )
        if self.burn_in > self.sequence_overlap:
            raise ValueError(
                f"burn_in must be at most sequence_overlap ({self.sequence_overlap}), got "
                f"{self.burn_in}: a step burnt in is learned from only in the sequence before, "
                "inside its overlap"
            )
        if 2 * m > self.capacity:
            raise ValueError(
                f"capacity must hold two sequences, 2 x sequence_length = {2 * m:,} steps, got "
                f"{self.capacity:,}: a complete sequence is then always stored"
            )


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """The training loop's budget and schedules."""

    total_steps: int = setting(
        20_000,
        "Environment steps to train for (the budget).",
        _COUNT,
        label="Env steps budget",
        step=1000,
    )
    learning_starts: int = setting(
        1_000,
        "Environment steps collected before the first update.",
        Integer(minimum=0),
        label="Warm-up steps",
    )
    train_every: int = setting(
        1, "Environment steps per learner update.", _COUNT, label="Steps per update"
    )
    epsilon_start: float = setting(
        1.0, "Initial exploration rate of epsilon-greedy.", _UNIT, label="Initial exploration"
    )
    epsilon_end: float = setting(0.05, "Final exploration rate.", _UNIT, label="Final exploration")
    epsilon_fraction: float = setting(
        0.25,
        "Fraction of the budget over which epsilon decays linearly.",
        _UNIT,
        label="Exploration decay fraction",
    )
    log_every: int = setting(
        10, "Record loss and TD-error statistics every K updates.", _COUNT, label="Log period"
    )
    histogram_every: int = setting(
        200,
        "Record priority and IS-weight histograms (heatmaps) every K updates.",
        _COUNT,
        label="Histogram period",
    )
    eval_every: int = setting(
        0,
        "Env steps between two greedy evaluations of the policy on held-out env seeds, recorded "
        "with the run (0: none).",
        Integer(minimum=0),
        label="Evaluate every",
        step=1000,
    )
    eval_episodes: int = setting(
        5,
        "Greedy episodes per evaluation, one per held-out env seed (10,000, 10,001, ...).",
        Integer(minimum=1, maximum=100),
        label="Episodes per evaluation",
    )
    stop_at_return: float | None = setting(
        None,
        f"End the run, finished, once the mean return of the last {RETURN_WINDOW} episodes "
        "reaches this (None: train for the whole budget).",
        Real(optional=True),
        label="Stop at mean return",
    )

    def __post_init__(self) -> None:
        check_fields(self)

    @property
    def planned_updates(self) -> int:
        """Learner updates the budget gives, exactly: one at each env step s with
        learning_starts < s <= total_steps and s % train_every == 0, so
        U = floor(total_steps / train_every) - floor(learning_starts / train_every).
        beta is beta0 at the first of them and beta_end at the last."""
        every = self.train_every
        return max(0, self.total_steps // every - self.learning_starts // every)

    def reached_goal(self, env_steps: int) -> bool:
        """Whether a run of these settings that finished after ``env_steps`` reached its goal
        (``stop_at_return``): only that ends one before its budget is spent."""
        return self.stop_at_return is not None and env_steps < self.total_steps

    def finished_how(self, env_steps: int) -> str:
        """How a run of these settings that finished after ``env_steps`` ended, in words."""
        if self.reached_goal(env_steps):
            return (
                f"it reached its goal, a mean return of {self.stop_at_return:g} over "
                f"{RETURN_WINDOW} episodes"
            )
        return "its budget of steps is spent"


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything that defines a run; `RunConfig()` is a working default (per-notebook)."""

    preset: str | None = setting(
        None,
        "Name of the preset this config started from.",
        Choice((None, *PRESET_NAMES)),
        label="Preset",
    )
    seed: int = setting(
        0,
        "Seed of every random stream in the run (env, replay, agent).",
        Integer(minimum=0, maximum=2**31 - 1),
        label="Seed",
    )
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
        check_fields(self)
        if self.train.learning_starts < self.replay.batch_size:
            raise ValueError(
                f"train.learning_starts must be >= replay.batch_size ({self.replay.batch_size}), "
                f"got {self.train.learning_starts}"
            )
        train = self.train
        if train.planned_updates == 0:
            # Such a run would end 'finished' having learned nothing, which reads as a result.
            first = (train.learning_starts // train.train_every + 1) * train.train_every
            raise ValueError(
                f"train.learning_starts = {shown(train.learning_starts)} and train.train_every = "
                f"{shown(train.train_every)} leave no learner update within train.total_steps = "
                f"{train.total_steps:,} (the first update would come at env step {shown(first)}): "
                "lower them or raise the budget"
            )
        if self.replay.window > self.replay.capacity:
            raise ValueError(
                f"replay.window must be at most replay.capacity ({self.replay.capacity:,}), "
                f"got {shown(self.replay.window)}"
            )
        if self.agent.network == "conv" and self.env.id not in MINATAR_ENVS:
            raise ValueError(
                f"agent.network=conv reads MinAtar's 10x10 frames, which {self.env.id} does not "
                f"give: choose a MinAtar env ({', '.join(MINATAR_ENVS)}) or another network"
            )
        if self.agent.network != "recurrent" and self.replay.window != 1:
            raise ValueError(
                f"replay.window must be 1 for the {self.agent.network} network "
                f"(only the recurrent network reads windows), got {self.replay.window}"
            )
        if self.replay.mode == "sequences":
            self._check_sequences()

    def _check_sequences(self) -> None:
        replay = self.replay
        if self.agent.network != "recurrent":
            raise ValueError(
                f"replay.mode 'sequences' needs agent.network 'recurrent' (only the recurrent "
                f"network reads sequences), got {self.agent.network!r}"
            )
        if self.train.learning_starts < replay.sequence_length:
            raise ValueError(
                f"train.learning_starts must be >= replay.sequence_length "
                f"({replay.sequence_length}) in sequences mode, got {self.train.learning_starts}: "
                "the first update needs a complete sequence"
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

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """Build from `to_dict()` output; unknown keys and bad values raise `ValueError`
        (`RETIRED_FIELDS`, which earlier versions wrote, are dropped)."""
        return config_paths.build(cls, data, retired=RETIRED_FIELDS)

    def with_overrides(self, overrides: collections.abc.Mapping[str, Any]) -> RunConfig:
        """A copy with dotted-path fields replaced, e.g. `{"replay.alpha": 0.7, "seed": 3}`."""
        return RunConfig.from_dict(self._overridden(overrides))

    def _overridden(self, overrides: collections.abc.Mapping[str, Any]) -> dict[str, Any]:
        """`to_dict` with dotted-path fields replaced, not validated yet."""
        data = self.to_dict()
        for path, value in overrides.items():
            config_field(path)  # a leaf field, or ValueError naming the path
            node = data
            parts = path.split(".")
            for part in parts[:-1]:
                node = node[part]
            node[parts[-1]] = value
        return data

    def with_env(self, env_id: str) -> RunConfig:
        """A copy on another environment: its kwargs are kept only when the id stays the same
        (a preset's env options, such as Blind Cliffwalk's ``n``, mean nothing elsewhere)."""
        if env_id == self.env.id:
            return self
        return self.with_overrides({"env.id": env_id, "env.kwargs": {}})

    def with_budget(
        self, total_steps: int, overrides: collections.abc.Mapping[str, Any] | None = None
    ) -> RunConfig:
        """A copy with another env-step budget (and ``overrides``, applied with it: the config
        is checked once, with the new budget). The warm-up is capped at a tenth of the budget
        (but holds at least one batch, and in sequences mode one sequence), so a short budget
        still learns."""
        rule = config_field("train.total_steps").metadata["rule"]
        total_steps = rule.check("train.total_steps", total_steps)
        data = self._overridden(overrides or {})
        replay = data["replay"]
        batch_size, warm_up = replay["batch_size"], data["train"]["learning_starts"]
        if is_integer(batch_size) and is_integer(warm_up):  # else from_dict names the field
            least = batch_size
            if replay.get("mode") == "sequences" and is_integer(replay.get("sequence_length")):
                least = max(least, replay["sequence_length"])
            data["train"]["learning_starts"] = max(least, min(warm_up, total_steps // 10))
        data["train"]["total_steps"] = total_steps
        return RunConfig.from_dict(data)

    def leaves(self) -> dict[str, Any]:
        """Every leaf field by dotted path: ``{"preset": ..., "replay.alpha": 0.6, ...}``."""
        return config_paths.flatten(self.to_dict())

    def overrides_from(self, base: RunConfig) -> dict[str, Any]:
        """The dotted overrides that turn ``base`` into this config (fields that differ)."""
        mine, theirs = self.leaves(), base.leaves()
        return {path: value for path, value in mine.items() if theirs[path] != value}

    def get(self, path: str) -> Any:
        """The value of a dotted-path field, e.g. ``config.get("replay.alpha")``."""
        config_field(path)
        value: Any = self
        for part in path.split("."):
            value = getattr(value, part)
        return value


RETIRED_FIELDS: frozenset[str] = frozenset({"replay.rank_sort_every"})
"""Fields that configs stored by earlier versions may hold and that no longer exist; `from_dict`
drops them. ``replay.rank_sort_every``: the rank order was re-sorted every K changes; it is now
exact at every draw, so there is nothing to set."""


def config_field(path: str) -> dataclasses.Field[Any]:
    """The `RunConfig` field behind a dotted path (``"replay.alpha"``), with its doc, rule and
    label in ``metadata``; ``ValueError`` for a path that names no leaf field (with the closest
    names, for a typo)."""
    return config_paths.field_at(RunConfig, path)


def field_docs() -> dict[str, str]:
    """`{"replay.alpha": "Priority exponent: ...", ...}` for every leaf field of `RunConfig`."""
    return config_paths.leaf_docs(RunConfig)
