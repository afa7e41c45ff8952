"""Resource limits on the settings users choose, set by whoever runs the server.

A classroom server takes run settings from thirty students (forms, links, the command line), and
one of them asking for ``replay.capacity=10**12`` must get a clear refusal, not an out-of-memory
crash of a shared machine. `check_limits` checks a `RunConfig` against `Limits` before anything
is allocated: the sizes themselves, then an estimate of the memory a run needs
(`memory_estimate`). The CLI calls it before it trains or files a run; the dashboard and the run
registry call it the same way::

    from rdqn.limits import check_limits
    check_limits(config)            # the server's limits (environment variables, else defaults)
    check_limits(config, Limits())  # the defaults

Every refusal is a `LimitError` (a ``ValueError``) naming the setting, its value, the limit and
the environment variable that raises it. Limits, their defaults (sized for one classroom server)
and their variables:

| limit | default | variable | bounds |
|---|---:|---|---|
| capacity | 2,000,000 | RDQN_LIMIT_CAPACITY | replay.capacity (transitions) |
| total_steps | 10,000,000 | RDQN_LIMIT_TOTAL_STEPS | train.total_steps (``--steps``) |
| window | 64 | RDQN_LIMIT_WINDOW | replay.window |
| batch_size | 4,096 | RDQN_LIMIT_BATCH_SIZE | replay.batch_size |
| env_size | 10,000 | RDQN_LIMIT_ENV_SIZE | env.kwargs n, n_returns (observation length) |
| episode_steps | 100,000 | RDQN_LIMIT_EPISODE_STEPS | env.kwargs episode_length, max_steps, |
| | | | max_episode_steps |
| threads | usable cores | RDQN_LIMIT_THREADS | ``--threads``, ``compare --parallel`` |
| comparison_runs | 60 | RDQN_LIMIT_COMPARISON_RUNS | runs in one comparison (schemes x seeds) |
| memory_bytes | 4 GiB | RDQN_LIMIT_MEMORY_BYTES | `memory_estimate` of one run |
| csv_bytes | 32 MiB | RDQN_LIMIT_CSV_BYTES | a prices CSV's size (before it is read) |
| csv_rows | 1,000,000 | RDQN_LIMIT_CSV_ROWS | a prices CSV's rows, or env.kwargs prices |
| csv_columns | 32 | RDQN_LIMIT_CSV_COLUMNS | a prices CSV's columns (before parsing) |

``n`` is Blind Cliffwalk's and the sparse chain's size, ``n_returns`` the market's returns per
observation; ``episode_length`` is the market's, ``max_steps`` the chain's, and
``max_episode_steps`` gymnasium's time limit.

A variable holds a positive integer (``2_000_000`` is fine); the byte limits also take a unit,
``4GiB``, ``512MiB``, ``64KiB`` (or K, M, G, T). A malformed value, or an ``RDQN_LIMIT_`` name
that is not a limit (a typo would otherwise go unnoticed), is a ``ValueError`` naming the
variable.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from rdqn.envs.options import observation_itemsize, observation_size
from rdqn.envs.prices_csv import CsvLimits
from rdqn.replay.sizes import replay_nbytes, sequence_replay_nbytes, sequence_slots
from rdqn.validation import is_integer, parse_count

if TYPE_CHECKING:
    from rdqn.config import RunConfig

__all__ = [
    "ENV_PREFIX",
    "LimitError",
    "Limits",
    "check_comparison_runs",
    "check_limits",
    "check_threads",
    "describe",
    "memory_estimate",
    "variable",
]

ENV_PREFIX = "RDQN_LIMIT_"
GiB = 1 << 30
MiB = 1 << 20


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class LimitError(ValueError):
    """A setting above one of the server's `Limits`."""


@dataclass(frozen=True, kw_only=True)
class Limits:
    """The largest values users may choose (module docstring: defaults and variables)."""

    capacity: int = 2_000_000
    total_steps: int = 10_000_000
    window: int = 64
    batch_size: int = 4096
    env_size: int = 10_000
    episode_steps: int = 100_000
    threads: int = field(default_factory=_usable_cores)
    comparison_runs: int = 60
    memory_bytes: int = 4 * GiB
    csv_bytes: int = CsvLimits.csv_bytes
    csv_rows: int = CsvLimits.csv_rows
    csv_columns: int = CsvLimits.csv_columns

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not is_integer(value) or value < 1:
                raise ValueError(f"Limits.{item.name} must be an integer >= 1, got {value!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Limits:
        """The defaults, each replaced by its ``RDQN_LIMIT_<NAME>`` variable where one is set."""
        environ = os.environ if environ is None else environ
        names = {variable(item.name): item.name for item in fields(cls)}
        values: dict[str, int] = {}
        for key, text in environ.items():
            if not key.startswith(ENV_PREFIX):
                continue
            if key not in names:
                raise ValueError(f"{key} is not a limit; the limits are {', '.join(names)}")
            values[names[key]] = parse_count(key, text, with_unit=key.endswith("_BYTES"))
        return cls(**values)


def variable(name: str) -> str:
    """The environment variable of limit ``name``: ``RDQN_LIMIT_CAPACITY`` for capacity."""
    return ENV_PREFIX + name.upper()


def _refuse(setting: str, value: int, limits: Limits, name: str, what: str = "") -> None:
    limit = getattr(limits, name)
    if value > limit:
        raise LimitError(
            f"{setting} = {value:,} is above this server's limit of {limit:,}{what}; choose a "
            f"smaller value, or whoever runs the server can raise {variable(name)}"
        )


def check_threads(threads: int, limits: Limits | None = None, setting: str = "--threads") -> None:
    """`LimitError` when ``threads`` (torch threads, or runs at once) exceeds ``limits.threads``."""
    _refuse(setting, threads, limits or Limits.from_env(), "threads", " (cores)")


def check_comparison_runs(runs: int, limits: Limits | None = None) -> None:
    """`LimitError` when a comparison of ``runs`` runs exceeds ``limits.comparison_runs``."""
    _refuse(
        "runs in the comparison (schemes x seeds)",
        runs,
        limits or Limits.from_env(),
        "comparison_runs",
    )


_ENV_SIZES = ("n", "n_returns")
_EPISODE_STEPS = ("episode_length", "max_steps", "max_episode_steps")


def check_limits(config: RunConfig, limits: Limits | None = None) -> None:
    """`LimitError` for the first setting of ``config`` above ``limits`` (default: the server's,
    `Limits.from_env`), then for a `memory_estimate` above ``limits.memory_bytes``. Settings of
    the wrong type are left to the config and the env, which name what they allow."""
    limits = limits or Limits.from_env()
    replay = config.replay
    _refuse("replay.capacity", replay.capacity, limits, "capacity", " transitions")
    _refuse("train.total_steps", config.train.total_steps, limits, "total_steps", " env steps")
    _refuse("replay.window", replay.window, limits, "window")
    _refuse("replay.batch_size", replay.batch_size, limits, "batch_size")
    kwargs = config.env.kwargs
    for name in _ENV_SIZES:
        if is_integer(kwargs.get(name)):
            _refuse(f"env.kwargs.{name}", kwargs[name], limits, "env_size")
    for name in _EPISODE_STEPS:
        if is_integer(kwargs.get(name)):
            _refuse(f"env.kwargs.{name}", kwargs[name], limits, "episode_steps", " steps")
    if isinstance(kwargs.get("prices"), list | tuple):
        _refuse("the length of env.kwargs.prices", len(kwargs["prices"]), limits, "csv_rows")
    needed = memory_estimate(config)
    if needed > limits.memory_bytes:
        length = "window"
        if replay.mode == "sequences":
            length = "sequence_length"
        raise LimitError(
            f"this run needs about {_size(needed)} of memory (replay.capacity "
            f"{replay.capacity:,} x observations of "
            f"{observation_size(config.env.id, kwargs):,} values, batch {replay.batch_size:,} x "
            f"{length} {getattr(replay, length)}), above this server's limit of "
            f"{_size(limits.memory_bytes)}; lower replay.capacity, replay.batch_size or "
            f"replay.{length}, or whoever runs the server can raise {variable('memory_bytes')}"
        )


def _size(n: int) -> str:
    return f"{n / GiB:.1f} GiB" if n >= GiB else f"{n / MiB:.1f} MiB"


_ACTIONS = 3  # the most any rdqn env has (the market: flat, long, short)
_LSTM_BYTES_PER_STEP = 16 * 1024
"""Per sampled row and window step, the two-LSTM net keeps gates and states for backprop in the
online pass and runs the target pass: about 4,000 float32s."""
STATE_VALUES = 4 * 128
"""The recurrent net's state, which sequence replay stores per sequence (`rdqn.learn.nets.
STATE_SIZE`; named here so that a server sizes a run without importing torch)."""


def memory_estimate(config: RunConfig) -> int:
    """Bytes a run of ``config`` allocates at least, estimated without allocating anything.

    The replay memory, full (`rdqn.replay.sizes.replay_nbytes`, observations stored as the
    trainer stores them, `observation_itemsize`; with sequence replay `sequence_replay_nbytes`,
    its sequences' states included); a sampled batch
    (windows W_t and W_{t+1}, or sequences of m + 1 observations, as NumPy arrays and as
    tensors); the network's parameters with the target copy and Adam's two moments; and, for
    the recurrent net, its activations over the batch's steps. Torch and Python themselves (a
    few hundred MiB) are not counted.
    Loads no kernel: a server checks a run's settings with it before any worker starts.
    """
    obs = observation_size(config.env.id, config.env.kwargs)
    replay = config.replay
    rows = replay.batch_size * replay.window
    batch = 2 * 2 * rows * obs * 4
    itemsize = observation_itemsize(config.env.id)
    memory = replay_nbytes(replay.capacity, obs, replay.scheme, itemsize)
    if replay.mode == "sequences":  # one array of m + 1 observations a row, its state too
        rows = replay.batch_size * (replay.sequence_length + 1)
        state = STATE_VALUES if replay.stored_state else 0
        batch = 2 * (rows * obs + replay.batch_size * state) * 4
        slots = sequence_slots(replay.capacity, replay.sequence_length, replay.sequence_overlap)
        memory = sequence_replay_nbytes(replay.capacity, obs, replay.scheme, slots, state, itemsize)
    network = config.agent.network
    if network == "recurrent":
        parameters = 512 * (obs + 130) + 512 * 258 + 8256 + 65 * _ACTIONS
        activations = rows * _LSTM_BYTES_PER_STEP
    elif network == "mlp":
        parameters = (obs + 1) * 64 + 65 * 64 + 65 * _ACTIONS
        activations = 0
    elif network == "conv":
        parameters = 144 * (obs // 100) + 16 + 131_200 + 129 * _ACTIONS
        activations = 0
    else:
        parameters = obs * _ACTIONS
        activations = 0
    return memory + batch + 4 * 4 * parameters + activations


def describe(limits: Limits) -> dict[str, Any]:
    """``{"RDQN_LIMIT_CAPACITY": 2000000, ...}``: the limits in force, by variable."""
    return {variable(name): value for name, value in dataclasses.asdict(limits).items()}
