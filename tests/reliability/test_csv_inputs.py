"""Prices CSVs and uploads (`rdqn.envs.read_prices_csv`): parsed strictly, at bounded cost, and
every problem a ``ValueError`` saying what is wrong and where.

Regressions: ragged rows loaded wrong data (a header of one column over rows of two
made pandas take the first field as the index: 600 prices, all 2.0); non-UTF-8 bytes gave a bare
codec error; 100,000 columns took 7 s to parse; a 1e300 price was accepted (and overflowed the
float32 rewards mid-run); a missing file or a directory gave FileNotFoundError/IsADirectoryError.
"""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.envs import PriceSeries, load_prices_csv, make_env, prices_csv, read_prices_csv
from rdqn.limits import Limits

GOOD = "t,price\n" + "".join(f"{k},{100 + k % 7}\n" for k in range(600))

BAD: list[tuple[str, bytes, str]] = [
    # (case, file content, what the message must say)
    (
        "ragged: more fields",
        b"price\n" + b"1,2.0\n" * 600,
        r"line 2 has 2 field\(s\), the header has 1",
    ),
    (
        "ragged: fewer fields",
        b"t,price\n0,100\n101\n",
        r"line 3 has 1 field\(s\), the header has 2",
    ),
    ("ragged: one long row", b"t,price\n0,100\n1,101,7\n", r"line 3 has 3 field\(s\)"),
    ("not UTF-8", b"price\n100\n\xff\xfe101\n", r"is not UTF-8 text \(byte 0xff at offset 10\)"),
    ("UTF-16", "price\n100\n101\n".encode("utf-16"), r"not UTF-8 text \(byte 0xff at offset 0\)"),
    ("latin-1 header", "prix\xe9\n100\n".encode("latin-1"), r"not UTF-8 text \(byte 0xe9"),
    (
        "1e300",
        b"price\n100\n1e300\n101\n",
        r"row 2: '1e300' is outside \[1e-06, 1e\+09\] \(line 3\)",
    ),
    ("1e-300", b"price\n100\n1e-300\n", r"row 2: '1e-300' is outside"),
    ("overflow to inf", b"price\n100\n1e400\n", r"row 2: '1e400' is not finite \(line 3\)"),
    ("infinity", b"price\n100\nInfinity\n", r"'Infinity' is not finite"),
    ("nan", b"price\nnan\n100\n", r"row 1: 'nan' is not finite"),
    ("negative", b"price\n100\n-5\n", r"row 2: '-5' is not > 0"),
    ("zero", b"price\n100\n0\n", r"row 2: '0' is not > 0"),
    ("text", b"price\n100\nabc\n", r"row 2: 'abc' is not a number \(line 3\)"),
    ("hex", b"price\n100\n0x10\n", r"'0x10' is not a number"),
    ("decimal comma", b'price\n100\n"1,5"\n', r"'1,5' is not a number"),
    ("empty cell", b"t,price\n0,100\n1,\n", r"row 2: '' is not a number"),
    ("empty", b"", r"is empty: no header row with column 'price'"),
    ("blank lines only", b"\n\n  \n", r"is empty: no header row"),
    ("header only", b"price\n", r"has 0 row\(s\); need at least 2"),
    ("one row", b"price\n100\n", r"has 1 row\(s\); need at least 2"),
    (
        "no price column",
        b"time,close\n0,1\n",
        r"no column 'price' in its header row; columns: \['time', 'close'\]",
    ),
    ("price column twice", b"price,price\n1,2\n3,4\n", r"has twice or more column 'price'"),
    ("semicolons", b"t;price\n0;100\n1;101\n", r"no column 'price'"),
    ("NUL byte", b"price\n100\n10\x001\n", r"line 3"),
    ("unclosed quote", b'price\n100\n"101\n102\n', r"price CSV"),
    ("quote in a field", b'price\n100\n10"1\n', r"price CSV"),
    ("huge field", b"price\n100\n" + b"1" * 200_000 + b"\n", r"price CSV"),
]


NOT_TEXT = {"not UTF-8", "UTF-16", "latin-1 header"}  # an open text file is decoded already
FORMS = ["bytes", "path", "binary file", "text file"]


@pytest.mark.parametrize(
    ("case", "data", "match", "form"),
    [
        (*bad, form)
        for bad in BAD
        for form in FORMS
        if not (form == "text file" and bad[0] in NOT_TEXT)
    ],
    ids=[
        f"{bad[0]}-{form}"
        for bad in BAD
        for form in FORMS
        if not (form == "text file" and bad[0] in NOT_TEXT)
    ],
)
def test_bad_csv_is_a_value_error_that_says_where(
    tmp_path: Path, case: str, data: bytes, match: str, form: str
) -> None:
    source: object = {
        "bytes": data,
        "path": tmp_path / "prices.csv",
        "binary file": io.BytesIO(data),
        "text file": io.StringIO(data.decode("utf-8", errors="replace"), newline=""),
    }[form]
    (tmp_path / "prices.csv").write_bytes(data)
    with pytest.raises(ValueError, match=match):
        read_prices_csv(source)  # type: ignore[arg-type]


def test_path_messages_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_bytes(b"price\n100\nabc\n")
    with pytest.raises(ValueError, match=rf"price CSV {path}: column 'price', row 2"):
        load_prices_csv(path)
    path.write_bytes(b"\xff")
    with pytest.raises(ValueError, match=rf"price CSV {path} is not UTF-8"):
        load_prices_csv(str(path))


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (
            lambda tmp: tmp / "missing.csv",
            r"missing.csv: cannot be read \(No such file or directory\)",
        ),
        (lambda tmp: tmp, r"is a directory, not a file"),
        (lambda tmp: Path("/dev/null"), r"/dev/null is not a regular file"),
    ],
    ids=["missing", "directory", "device"],
)
def test_a_path_that_is_not_a_readable_file(tmp_path: Path, make, match: str) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=match):
        load_prices_csv(make(tmp_path))


def test_an_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "locked.csv"
    path.write_text(GOOD)
    path.chmod(0)
    try:
        try:
            path.read_bytes()
        except PermissionError:
            with pytest.raises(
                ValueError, match=r"locked.csv: cannot be read \(Permission denied\)"
            ):
                load_prices_csv(path)
        else:  # running as root: permissions do not apply, so the file reads
            assert load_prices_csv(path).size == 600
    finally:
        path.chmod(0o600)


@pytest.mark.parametrize("source", [None, 12, ["price", "1"], object()])
def test_a_source_that_is_no_file(source: object) -> None:
    with pytest.raises(ValueError, match="price CSV must be a path, bytes or an open file"):
        read_prices_csv(source)  # type: ignore[arg-type]


def test_a_good_csv_from_every_source_and_what_was_used(tmp_path: Path) -> None:
    path = tmp_path / "good.csv"
    path.write_text(GOOD)
    expected = np.array([100 + k % 7 for k in range(600)], dtype=np.float64)
    for source in (path, str(path), GOOD.encode(), io.BytesIO(GOOD.encode()), io.StringIO(GOOD)):
        series = read_prices_csv(source)
        np.testing.assert_array_equal(series.prices, expected)
        assert not series.prices.flags.writeable
    assert read_prices_csv(path).summary == f"600 prices from column 'price' of {path} (100 to 106)"
    upload = read_prices_csv(GOOD.encode())
    assert upload == PriceSeries(upload.prices, "price", "the upload")
    assert upload.summary.startswith("600 prices from column 'price' of the upload")


@pytest.mark.parametrize(
    "text",
    [
        "\ufeffprice\n100\n101\n",  # a byte-order mark, as spreadsheet programs write
        "price\r\n100\r\n101\r\n",  # Windows line ends
        "\n\nprice\n\n100\n  \n101",  # blank lines, no final newline
        " price , t \n 100 ,0\n101, 1\n",  # spaces around names and numbers
        'price,note\n100,"a, b"\n101,"say ""hi"""\n',  # quoted fields
    ],
)
def test_what_spreadsheets_write_is_read(text: str) -> None:
    np.testing.assert_array_equal(read_prices_csv(text.encode()).prices, [100.0, 101.0])


LIMITS = Limits(csv_bytes=2000, csv_rows=100, csv_columns=4)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (
            b"price\n" + b"100\n" * 600,
            r"is 2,406 bytes; the limit is 2,000 \(RDQN_LIMIT_CSV_BYTES\)",
        ),
        (b"price\n" + b"1\n" * 101, r"has 101 rows; the limit is 100 \(RDQN_LIMIT_CSV_ROWS\)"),
        (
            b"a,b,c,d,price\n1,2,3,4,5\n",
            r"has 5 columns; the limit is 4 \(RDQN_LIMIT_CSV_COLUMNS\)",
        ),
    ],
    ids=["bytes", "rows", "columns"],
)
def test_limits_are_checked_before_parsing(data: bytes, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        read_prices_csv(data, limits=LIMITS)
    assert read_prices_csv(b"price\n" + b"1\n" * 100, limits=LIMITS).prices.size == 100


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    with path.open("wb") as file:
        file.truncate(3000)  # sparse: no data to read, only a size
    with pytest.raises(ValueError, match=r"big.csv is 3,000 bytes; the limit is 2,000"):
        read_prices_csv(path, limits=LIMITS)
    with pytest.raises(ValueError, match=r"more than 2,000 bytes"):
        read_prices_csv(io.BytesIO(b"x" * 3000), limits=LIMITS)


def test_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RDQN_LIMIT_CSV_ROWS", "3")
    with pytest.raises(ValueError, match="RDQN_LIMIT_CSV_ROWS"):
        load_prices_csv(b"price\n1\n2\n3\n4\n")
    monkeypatch.setenv("RDQN_LIMIT_CSV_ROWS", "lots")
    with pytest.raises(ValueError, match="RDQN_LIMIT_CSV_ROWS must be a positive integer"):
        load_prices_csv(b"price\n1\n2\n")


def test_100k_columns_are_refused_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parsing this took 7 s; it is refused from the header line alone, before
    the CSV parser reads a field."""

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("the CSV was parsed before it was refused")

    monkeypatch.setattr(prices_csv, "csv", SimpleNamespace(reader=no_parsing))
    header = ",".join(f"c{k}" for k in range(100_000)).encode()
    data = header + b"\n" + b",".join([b"1"] * 100_000) + b"\n"
    with pytest.raises(ValueError, match=r"has 100,000 columns; the limit is 32"):
        read_prices_csv(data)


def test_a_short_series_is_refused_by_the_market_with_what_it_needs() -> None:
    prices = load_prices_csv(b"price\n" + b"100\n" * 100)
    with pytest.raises(ValueError, match=r"prices has 100 values; an episode needs .* = 509"):
        make_env("rdqn/SyntheticMarket-v0", prices=prices)


def test_make_env_reads_prices_csv(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("price\n" + "".join(f"{100 + k % 3}\n" for k in range(30)))
    env = make_env("rdqn/SyntheticMarket-v0", seed=0, prices_csv=str(path), episode_length=10)
    _, info = env.reset()
    assert 100 <= info["price"] <= 102
    with pytest.raises(ValueError, match="directory"):
        make_env("rdqn/SyntheticMarket-v0", prices_csv=str(tmp_path))


@pytest.mark.parametrize(
    ("prices", "match"),
    [
        ([100.0, 1e300], r"prices\[1\] = 1e\+300"),
        ([100.0, -1.0], r"prices\[1\] = -1.0"),
        ([[100.0, 101.0]], "one-dimensional"),
        (["a", "b"], "prices must be numbers"),
        ([100.0, None], r"prices\[1\] = nan"),
    ],
)
def test_the_market_checks_prices_given_directly(prices: list, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_env("rdqn/SyntheticMarket-v0", prices=prices)


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes_never_raise_anything_but_value_error(data: bytes) -> None:
    try:
        prices = load_prices_csv(data, limits=LIMITS)
    except ValueError:
        return
    assert prices.size >= 2 and np.isfinite(prices).all() and (prices > 0).all()


ALPHABET = st.sampled_from(
    ["price", "t", ",", "\n", "\r\n", '"', "1", "0.5", "e9", "-", " ", "nan", "\x00", "é"]
)


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(ALPHABET, max_size=60))
def test_csv_like_text_never_raises_anything_but_value_error(parts: list[str]) -> None:
    """Text near the format (headers, separators, quotes, numbers) reaches the deeper checks."""
    try:
        prices = load_prices_csv("".join(parts).encode(), limits=LIMITS)
    except ValueError:
        return
    assert prices.size >= 2 and np.isfinite(prices).all() and (prices > 0).all()
