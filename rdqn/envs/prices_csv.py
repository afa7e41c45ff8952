"""Prices CSVs: read a price series from one column of a CSV, strictly and at bounded cost.

Format: UTF-8 text (a byte-order mark is allowed), comma-separated fields, a header row naming
the price column exactly once, then one row per price with the header's number of fields; blank
lines are skipped. Every cell of the column must be a number in `PRICE_RANGE` (the prices
`rdqn.envs.SyntheticMarketEnv` takes), and there must be at least ``min_rows`` of them.

Strict: nothing is guessed or repaired. A wrong encoding, a missing or repeated column, a short
or long row, a malformed quote, a cell that is not a number or is out of range, or too few rows
is a ``ValueError`` that says what is wrong and where (the data row and the file's line).

Bounded cost: before anything is parsed, the file's size, its lines and the header's fields are
checked against a `CsvBounds` (by default `CsvLimits.from_env`, the server's
``RDQN_LIMIT_CSV_*``), so an upload or a path cannot make the reader use unbounded memory or time.
`read_prices_csv` returns a `PriceSeries` (the prices and where they came from);
`load_prices_csv` returns just the prices.
"""

from __future__ import annotations

import csv
import io
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from rdqn.validation import parse_count

PRICE_RANGE = (1e-6, 1e9)
"""Prices the market takes: rewards are price differences stored as float32, so a price of 1e300
would overflow them (and no real asset trades there)."""


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
