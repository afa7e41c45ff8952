"""A synthetic high-frequency market: trade one asset flat / long / short on a seeded price path.

Price process (one path per episode, drawn from the env's ``np_random``, so a seed fixes it). The
log price ``x_t = log p_t`` is a discretized Ornstein-Uhlenbeck process around ``log
initial_price`` whose volatility switches between a calm and a stormy regime::

    x_{t+1} = x_t + kappa * (mu - x_t) + sigma[z_t] * eps_t,   eps_t ~ N(0, 1),  mu = x_0
    z_{t+1} = z_t with probability 1 - switch_probability, else 1 - z_t   (z_0 uniform on {0, 1})

with ``kappa = mean_reversion`` and ``sigma = (calm_volatility, stormy_volatility)``. Mean reversion
makes returns negatively autocorrelated, so the recent returns carry a (small) tradeable signal.
Instead of simulating, the env can replay a user-supplied price series (``prices=``, e.g. from
:func:`load_prices_csv`); each episode then starts at a random offset drawn from ``np_random``
(always 0 when the series is exactly as long as one episode needs).

Actions (``Discrete(3)``): 0 flat, 1 long, 2 short; the action *sets* the position to 0, +1 or -1.
Reward for the step from t to t+1, with ``position`` the position after the action::

    reward_t = position * (p_{t+1} - p_t) - cost * p_t * |position - previous_position|

``cost`` is a proportional transaction cost (default 1e-4, one basis point of the traded value per
unit of position changed); going from long to short changes the position by 2 and pays twice.
Rewards are in price units (profit and loss of one unit of the asset).

Observation (float32, length ``n_returns + 1``): the last ``n_returns`` log returns
``log(p_k / p_{k-1})`` for ``k = t-n_returns+1 .. t``, oldest first, followed by the current
position. Time order is already encoded, so an MLP sees a short history and a recurrent net can
see more through a window. ``n_returns`` warm-up prices precede the first decision, so the first
observation is full. Log returns are about 1e-3 in size with the default process: agents may
want to normalize their inputs.

There is no failure state: an episode is *truncated* after ``episode_length`` steps and never
terminates.
"""

from __future__ import annotations

import csv
import io
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, Any, Protocol, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import ArrayLike, NDArray

from rdqn.validation import check_integer, check_probability, check_real, parse_count

POSITIONS = (0, 1, -1)
"""Position set by each action: 0 flat, 1 long, 2 short."""

PRICE_RANGE = (1e-6, 1e9)
"""Prices the market takes: rewards are price differences stored as float32, so a price of 1e300
would overflow them (and no real asset trades there)."""


def _validate_prices(prices: ArrayLike) -> NDArray[np.float64]:
    """Return ``prices`` as a read-only float64 vector, or raise ``ValueError`` naming the index."""
    try:
        array = np.array(prices, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"prices must be numbers, got {str(prices)[:80]!r} ({err})") from None
    if array.ndim != 1:
        raise ValueError(f"prices must be one-dimensional, got shape {array.shape}")
    low, high = PRICE_RANGE
    bad = np.flatnonzero(~np.isfinite(array) | (array < low) | (array > high))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"prices must be finite, in [{low:g}, {high:g}], got prices[{i}] = {array[i]}"
        )
    array.setflags(write=False)
    return array


class CsvBounds(Protocol):
    """What bounds the cost of reading a prices CSV: a `CsvLimits`, or a server's
    `rdqn.limits.Limits`."""

    csv_bytes: int
    csv_rows: int
    csv_columns: int


@dataclass(frozen=True, kw_only=True)
class CsvLimits:
    """The most a prices CSV may hold, checked before it is parsed. `from_env` reads the
    server's ``RDQN_LIMIT_CSV_BYTES``, ``RDQN_LIMIT_CSV_ROWS`` and ``RDQN_LIMIT_CSV_COLUMNS``
    (`rdqn.limits` documents every limit)."""

    csv_bytes: int = 32 << 20
    csv_rows: int = 1_000_000
    csv_columns: int = 32

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CsvLimits:
        environ = os.environ if environ is None else environ
        values = {}
        for item in fields(cls):
            key = "RDQN_LIMIT_" + item.name.upper()
            if key in environ:
                values[item.name] = parse_count(key, environ[key], with_unit=key.endswith("BYTES"))
        return cls(**values)


@dataclass(frozen=True)
class PriceSeries:
    """A price series read from a CSV (`read_prices_csv`), with where it came from."""

    prices: NDArray[np.float64]
    column: str
    source: str
    """The file's path, or "the upload" for bytes and open files."""

    @property
    def summary(self) -> str:
        """What was used, in words: ``"600 prices from column 'price' of the upload (98.2 to
        103.1)"``."""
        return (
            f"{self.prices.size:,} prices from column {self.column!r} of {self.source} "
            f"({self.prices.min():g} to {self.prices.max():g})"
        )


def _read_bytes(source: Any, max_bytes: int, label: str) -> bytes:
    """The raw bytes of a path, bytes or open file, refusing more than ``max_bytes`` unread."""
    too_big = "price CSV{} is {} bytes; the limit is {:,} (RDQN_LIMIT_CSV_BYTES)"
    if isinstance(source, bytes | bytearray | memoryview):
        if len(source) > max_bytes:
            raise ValueError(too_big.format(label, f"{len(source):,}", max_bytes))
        data = bytes(source)
    elif isinstance(source, str | os.PathLike):
        path = Path(source)
        try:
            info = path.stat()
        except OSError as err:
            raise ValueError(f"price CSV {path}: cannot be read ({err.strerror or err})") from None
        if stat.S_ISDIR(info.st_mode):
            raise ValueError(f"price CSV {path} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"price CSV {path} is not a regular file")
        if info.st_size > max_bytes:
            raise ValueError(too_big.format(label, f"{info.st_size:,}", max_bytes))
        try:
            with path.open("rb") as file:
                data = file.read(max_bytes + 1)
        except OSError as err:
            raise ValueError(f"price CSV {path}: cannot be read ({err.strerror or err})") from None
    elif hasattr(source, "read"):
        data = source.read(max_bytes + 1)
        if isinstance(data, str):
            data = data.encode("utf-8", errors="surrogatepass")
    else:
        raise ValueError(
            f"price CSV must be a path, bytes or an open file, got {type(source).__name__}"
        )
    if len(data) > max_bytes:
        raise ValueError(too_big.format(label, f"more than {max_bytes:,}", max_bytes))
    return data


def _decode(data: bytes, label: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"price CSV{label} is not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
            f"{err.start}); save it as UTF-8 CSV"
        ) from None


def _first_line(text: str) -> str | None:
    """The first line that is not blank, found without splitting the whole text."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if text[start:end].strip():
            return text[start:end]
        start = end + 1
    return None


def read_prices_csv(
    source: str | os.PathLike[str] | bytes | IO[str] | IO[bytes],
    column: str = "price",
    *,
    min_rows: int = 2,
    limits: CsvBounds | None = None,
) -> PriceSeries:
    """Read a price series from column ``column`` of a CSV with a header row, strictly.

    ``source`` is a path, the file's bytes (an upload, checked before it is saved) or an open
    file. The file must be UTF-8 text with comma-separated fields, a header row naming
    ``column`` once, and the header's number of fields on every row (blank lines are skipped).
    Every cell of the column must be a number in `PRICE_RANGE`, and there must be at least
    ``min_rows`` rows (two give one return). Rows are numbered from 1 for the first data row;
    a message names the row and the file's line.

    Cost is bounded before parsing by ``limits`` (default: the server's, `CsvLimits.from_env`):
    the file's size (``csv_bytes``), its lines (``csv_rows``) and the header's fields
    (``csv_columns``). Every problem is a ``ValueError`` saying what is wrong and where.
    """
    if limits is None:
        limits = CsvLimits.from_env()
    label = f" {source}" if isinstance(source, str | os.PathLike) else ""
    text = _decode(_read_bytes(source, limits.csv_bytes, label), label)
    rows_after_header = text.count("\n") - text.endswith("\n")
    if rows_after_header > limits.csv_rows:
        raise ValueError(
            f"price CSV{label} has {rows_after_header:,} rows; the limit is "
            f"{limits.csv_rows:,} (RDQN_LIMIT_CSV_ROWS)"
        )
    header_line = _first_line(text)
    if header_line is None:
        raise ValueError(f"price CSV{label} is empty: no header row with column {column!r}")
    if header_line.count(",") + 1 > limits.csv_columns:
        raise ValueError(
            f"price CSV{label} has {header_line.count(',') + 1:,} columns; the limit is "
            f"{limits.csv_columns:,} (RDQN_LIMIT_CSV_COLUMNS)"
        )
    rows = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [name.strip() for name in next(rows)]
        while not any(header):
            header = [name.strip() for name in next(rows)]
        if header.count(column) != 1:
            found = "twice or more" if column in header else "no"
            raise ValueError(
                f"price CSV{label} has {found} column {column!r} in its header row; "
                f"columns: {header}"
            )
        where = header.index(column)
        cells: list[str] = []
        lines_of: list[int] = []
        for fields in rows:
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue  # a blank line
            if len(fields) != len(header):
                raise ValueError(
                    f"price CSV{label}: line {rows.line_num} has {len(fields)} field(s), the "
                    f"header has {len(header)}: every row needs one field per column"
                )
            cells.append(fields[where].strip())
            lines_of.append(rows.line_num)
    except csv.Error as err:
        raise ValueError(f"price CSV{label}: line {rows.line_num}: {err}") from None
    except StopIteration:
        raise ValueError(
            f"price CSV{label} is empty: no header row with column {column!r}"
        ) from None
    values = _numbers(cells, column, lines_of, label)
    if values.size < min_rows:
        raise ValueError(
            f"price CSV{label}: column {column!r} has {values.size} row(s); need at least "
            f"{min_rows}"
        )
    values.setflags(write=False)
    return PriceSeries(values, column, str(source) if label else "the upload")


def _numbers(cells: list[str], column: str, lines_of: list[int], label: str) -> NDArray[np.float64]:
    """The cells as prices; a ``ValueError`` names the first bad one's row and line."""
    try:
        values = np.array(cells, dtype=np.float64)
    except ValueError:
        values = np.array([_to_float(cell) for cell in cells], dtype=np.float64)
    low, high = PRICE_RANGE
    bad = np.flatnonzero(~(values >= low) | ~(values <= high))
    if bad.size:
        i = int(bad[0])
        cell, value = cells[i], values[i]
        if np.isnan(value) and cell.lower().lstrip("+-") != "nan":
            problem = f"{cell!r} is not a number"
        elif not np.isfinite(value):
            problem = f"{cell!r} is not finite"
        elif value <= 0:
            problem = f"{cell!r} is not > 0"
        else:
            problem = f"{cell!r} is outside [{low:g}, {high:g}]"
        raise ValueError(
            f"price CSV{label}: column {column!r}, row {i + 1}: {problem} (line {lines_of[i]})"
        )
    return values


def _to_float(cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        return float("nan")


def load_prices_csv(
    path_or_buffer: str | os.PathLike[str] | bytes | IO[str] | IO[bytes],
    column: str = "price",
    *,
    min_rows: int = 2,
    limits: CsvBounds | None = None,
) -> NDArray[np.float64]:
    """The prices of `read_prices_csv` (same arguments, same checks), as a read-only array."""
    return read_prices_csv(path_or_buffer, column, min_rows=min_rows, limits=limits).prices


class SyntheticMarketEnv(gym.Env[NDArray[np.float32], np.int64]):
    """Flat / long / short trading on a regime-switching mean-reverting price (module docstring)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        *,
        prices: ArrayLike | None = None,
        episode_length: int = 500,
        n_returns: int = 8,
        cost: float = 1e-4,
        initial_price: float = 100.0,
        mean_reversion: float = 0.05,
        calm_volatility: float = 0.001,
        stormy_volatility: float = 0.004,
        switch_probability: float = 0.01,
    ) -> None:
        """Configure the market.

        Args:
            prices: a price series to replay instead of simulating (in `PRICE_RANGE`, at least
                ``n_returns + episode_length + 1`` values).
            episode_length: decisions per episode before truncation.
            n_returns: log returns in each observation.
            cost: proportional transaction cost per unit of position changed.
            initial_price: simulated start price, also the level prices revert to.
            mean_reversion: OU pull kappa in (0, 1] per step toward log(initial_price).
            calm_volatility: per-step standard deviation of log price in the calm regime.
            stormy_volatility: the same in the stormy regime.
            switch_probability: per-step probability of switching regime.
        """
        check_integer("episode_length", episode_length, minimum=1)
        check_integer("n_returns", n_returns, minimum=1)
        check_real("cost", cost, minimum=0.0)
        check_real("initial_price", initial_price, minimum=0.0, open_minimum=True)
        check_real("mean_reversion", mean_reversion, minimum=0.0, maximum=1.0, open_minimum=True)
        check_real("calm_volatility", calm_volatility, minimum=0.0)
        check_real("stormy_volatility", stormy_volatility, minimum=0.0)
        check_probability("switch_probability", switch_probability)

        self.episode_length = int(episode_length)
        self.n_returns = int(n_returns)
        self.cost = float(cost)
        self.initial_price = float(initial_price)
        self.mean_reversion = float(mean_reversion)
        self.volatilities = (float(calm_volatility), float(stormy_volatility))
        self.switch_probability = float(switch_probability)
        # Prices one episode reads: the warm-up, one per decision, and the final price.
        self.path_length = self.n_returns + self.episode_length + 1

        self.prices: NDArray[np.float64] | None = None
        if prices is not None:
            self.prices = _validate_prices(prices)
            if self.prices.size < self.path_length:
                raise ValueError(
                    f"prices has {self.prices.size} values; an episode needs n_returns + "
                    f"episode_length + 1 = {self.path_length} (supply more prices or lower "
                    "episode_length)"
                )

        bound = np.finfo(np.float32).max
        low = np.full(self.n_returns + 1, -bound, dtype=np.float32)
        high = np.full(self.n_returns + 1, bound, dtype=np.float32)
        low[-1], high[-1] = -1.0, 1.0
        self.observation_space = spaces.Box(low, high, dtype=np.float32)
        self.action_space = spaces.Discrete(3)

        self._path = np.empty(0, dtype=np.float64)
        self._log_returns = np.empty(0, dtype=np.float64)
        self._regimes = np.empty(0, dtype=np.int64)
        self._t = 0
        self._steps = 0
        self._position = 0
        self._ready = False

    def simulate(
        self, rng: np.random.Generator, length: int
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Draw ``length`` prices of the regime-switching OU process and their regimes (0 calm)."""
        first = rng.integers(0, 2)
        switches = rng.random(length - 1) < self.switch_probability
        regimes = (first + np.concatenate(([0], np.cumsum(switches)))) % 2
        shocks = np.asarray(self.volatilities)[regimes[:-1]] * rng.standard_normal(length - 1)
        mu = np.log(self.initial_price)
        log_prices = np.empty(length, dtype=np.float64)
        log_prices[0] = mu
        for k in range(length - 1):
            log_prices[k + 1] = (
                log_prices[k] + self.mean_reversion * (mu - log_prices[k]) + shocks[k]
            )
        return np.exp(log_prices), regimes.astype(np.int64)

    @property
    def episode_prices(self) -> NDArray[np.float64]:
        """A copy of this episode's prices (``n_returns`` warm-up prices, then one per step)."""
        return self._path.copy()

    def _obs(self) -> NDArray[np.float32]:
        obs = np.empty(self.n_returns + 1, dtype=np.float32)
        obs[:-1] = self._log_returns[self._t - self.n_returns : self._t]
        obs[-1] = self._position
        return obs

    def _info(self) -> dict[str, Any]:
        regime = int(self._regimes[self._t]) if self._regimes.size else -1
        return {"price": float(self._path[self._t]), "position": self._position, "regime": regime}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.float32], dict[str, Any]]:
        """Draw (or pick from the supplied series) this episode's prices; start flat."""
        super().reset(seed=seed)
        if self.prices is None:
            self._path, self._regimes = self.simulate(self.np_random, self.path_length)
        else:
            offset = int(self.np_random.integers(0, self.prices.size - self.path_length + 1))
            self._path = self.prices[offset : offset + self.path_length]
            self._regimes = np.empty(0, dtype=np.int64)
        self._log_returns = np.diff(np.log(self._path))
        self._t = self.n_returns
        self._steps = 0
        self._position = 0
        self._ready = True
        return self._obs(), self._info()

    def step(
        self, action: np.int64 | int
    ) -> tuple[NDArray[np.float32], SupportsFloat, bool, bool, dict[str, Any]]:
        """Set the position, earn its PnL over one price step minus costs; truncate at the end."""
        if not self._ready:
            raise RuntimeError("step() called before reset() or after truncation; call reset()")
        if not self.action_space.contains(action):
            raise ValueError(f"action must be 0 (flat), 1 (long) or 2 (short), got {action!r}")
        position = POSITIONS[int(action)]
        price, next_price = self._path[self._t], self._path[self._t + 1]
        reward = position * (next_price - price) - self.cost * price * abs(
            position - self._position
        )
        self._position = position
        self._t += 1
        self._steps += 1
        truncated = self._steps >= self.episode_length
        self._ready = not truncated
        return self._obs(), float(reward), False, truncated, self._info()
