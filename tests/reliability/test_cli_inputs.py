"""Bad command lines: each is refused with exit status 2 and one ``rdqn: error:`` line that names
the parameter and the bad value, no traceback, and no run left in the store.

One table, run in-process (``rdqn.cli.main``) against a fresh store under tmp_path: what a
shared server meets (memory-sized values, integers too large for a float or for SQLite, a bad
preset, ``render_mode``, a missing or directory prices CSV, unwritable ``--out``/``--report``,
values once accepted silently), the server's limits (`rdqn.limits`), and, generated from the
config's field list, values of the wrong type or outside their range for every field through
``--set``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from rdqn.cli import main
from rdqn.config import RunConfig, config_field
from rdqn.runs.store import RunStore
from rdqn.validation import Choice, Flag, Integer, Mapping, Real, shown

TINY = [
    "--steps",
    "200",
    "--quiet",
    "--set",
    "train.learning_starts=64",
    "--set",
    "replay.capacity=256",
    "--set",
    "replay.batch_size=16",
]
COMPARE = ["compare", *TINY, "--seeds", "0", "--schemes", "uniform"]
MARKET = ["--env", "rdqn/SyntheticMarket-v0"]


@pytest.fixture(autouse=True)
def _restore_torch_threads() -> Iterator[None]:
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _values_of(rule: Any) -> list[str]:
    """--set values (JSON, or bare words) that ``rule`` refuses: wrong types, then its bounds."""
    if isinstance(rule, Integer):
        values = ["1.5", "x", "true", "null", "NaN", "1e400"]
        values += [str(rule.minimum - 1)] if rule.minimum is not None else []
        values += [str(rule.maximum + 1)] if rule.maximum is not None else []
    elif isinstance(rule, Real):
        values = ["NaN", "1e400", "-Infinity", "x", "true", "[1]"]
        values += [] if rule.optional else ["null"]
        if rule.minimum is not None:
            values.append(repr(float(rule.minimum - (0 if rule.open_minimum else 1))))
        if rule.maximum is not None:
            values.append(repr(float(rule.maximum + (0 if rule.open_maximum else 1))))
    elif isinstance(rule, Choice):
        values = ["nope", "1", "true", "[1]"] + ([] if None in rule.options else ["null"])
    elif isinstance(rule, Flag):
        values = ["1", "0", "yes", "null", '"true"']
    elif isinstance(rule, Mapping):
        values = ["[1]", "3", "x", "null"]
    else:
        raise AssertionError(f"no bad values for rule {rule!r}")
    return values


def _parsed(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def generated_cases() -> list[Any]:
    cases = []
    for path in RunConfig().leaves():
        if path == "preset":  # chosen with --preset; its own cases are below
            continue
        for raw in _values_of(config_field(path).metadata["rule"]):
            value = _parsed(raw)
            cases.append(
                pytest.param(
                    ["train", *TINY, "--set", f"{path}={raw}"],
                    [path, shown(value)],
                    {},
                    id=f"set-{path}={raw}",
                )
            )
    return cases


# (arguments, what the error line must contain, environment) -- "{tmp}" is the test's folder.
CASES = [
    # Memory-sized values.
    pytest.param(
        ["train", *TINY, "--set", "replay.capacity=1e12"],
        ["replay.capacity", "1000000000000.0"],
        {},
        id="capacity-1e12",
    ),
    pytest.param(
        ["train", *TINY, "--set", "replay.capacity=1000000000000"],
        ["replay.capacity = 1,000,000,000,000", "RDQN_LIMIT_CAPACITY"],
        {},
        id="capacity-10**12",
    ),
    pytest.param(
        ["train", *TINY, "--preset", "paper", "--set", 'env.kwargs={"n": 1000000000}'],
        ["env.kwargs.n = 1,000,000,000", "RDQN_LIMIT_ENV_SIZE"],
        {},
        id="cliffwalk-n-1e9",
    ),
    pytest.param(
        ["train", *TINY, "--env", "rdqn/SparseChain-v0", "--set", 'env.kwargs={"n": 1000000000}'],
        ["env.kwargs.n = 1,000,000,000"],
        {},
        id="chain-n-1e9",
    ),
    pytest.param(
        ["train", *TINY, *MARKET, "--set", 'env.kwargs={"episode_length": 1000000000}'],
        ["env.kwargs.episode_length = 1,000,000,000", "RDQN_LIMIT_EPISODE_STEPS"],
        {},
        id="market-episode-1e9",
    ),
    pytest.param(
        ["train", *TINY, *MARKET, "--set", 'env.kwargs={"n_returns": 100000000}'],
        ["env.kwargs.n_returns = 100,000,000"],
        {},
        id="market-n-returns-1e8",
    ),
    pytest.param(
        ["train", *TINY, "--set", 'env.kwargs={"max_episode_steps": 1000000000}'],
        ["env.kwargs.max_episode_steps = 1,000,000,000"],
        {},
        id="time-limit-1e9",
    ),
    pytest.param(
        ["train", *TINY, "--threads", "100000"],
        ["--threads = 100,000", "RDQN_LIMIT_THREADS"],
        {},
        id="threads-100000",
    ),
    pytest.param(
        ["train", *TINY, "--preset", "e14-lesson", "--set", "replay.window=100000"]
        + ["--set", "replay.capacity=200000"],
        ["replay.window = 100,000", "RDQN_LIMIT_WINDOW"],
        {},
        id="window-100000",
    ),
    pytest.param(
        ["train", *TINY, "--preset", "e14-lesson", "--set", "replay.window=300"],
        ["replay.window must be at most replay.capacity (256), got 300"],
        {},
        id="window-past-the-capacity",
    ),
    pytest.param(
        [
            "train",
            *TINY,
            "--set",
            "replay.capacity=200000",
            "--set",
            "train.learning_starts=100000",
            "--set",
            "replay.batch_size=100000",
            "--steps",
            "200000",
        ],
        ["replay.batch_size = 100,000", "RDQN_LIMIT_BATCH_SIZE"],
        {},
        id="batch-100000",
    ),
    pytest.param(
        ["train", "--quiet", "--preset", "paper", "--set", 'env.kwargs={"n": 10000}']
        + ["--set", "replay.capacity=2000000"],
        ["about", "GiB", "replay.capacity 2,000,000", "RDQN_LIMIT_MEMORY_BYTES"],
        {},
        id="memory-estimate",
    ),
    pytest.param(
        ["train", *TINY, "--set", "train.total_steps=100000000000000000000000"],
        ["train.total_steps = 100,000,000,000,000,000,000,000", "RDQN_LIMIT_TOTAL_STEPS"],
        {},
        id="set-steps-10**23",
    ),
    pytest.param(
        ["train", "--quiet", "--steps", "100000000000000000000000"],
        ["train.total_steps = 100,000,000,000,000,000,000,000"],
        {},
        id="steps-10**23",
    ),
    pytest.param(
        ["train", "--quiet", "--steps", "1e23"], ["--steps", "'1e23'"], {}, id="steps-1e23"
    ),
    # Integers too large for SQLite or for a float.
    pytest.param(
        ["train", *TINY, "--set", f"seed={2**70}"], ["seed", str(2**70)], {}, id="seed-2**70"
    ),
    pytest.param(
        ["train", *TINY, "--set", "seed=2**70"], ["seed", "'2**70'"], {}, id="seed-'2**70'"
    ),
    pytest.param(["train", *TINY, "--seed", str(2**70)], ["seed", str(2**70)], {}, id="--seed"),
    pytest.param(
        ["train", *TINY, "--set", "agent.lr=" + "1" * 400],
        ["agent.lr", "1" * 50, "(400 characters)"],
        {},
        id="lr-400-digits",
    ),
    pytest.param(
        ["train", *TINY, "--set", "agent.lr=" + "1" * 5000],
        ["agent.lr", "'" + "1" * 50, "(5,002 characters)"],
        {},
        id="lr-5000-digits",
    ),
    pytest.param(
        ["train", *TINY, "--set", "replay.alpha=1e308"], ["replay.alpha", "1e+308"], {}, id="alpha"
    ),
    pytest.param(  # it once passed and the run failed at its second update
        ["train", *TINY, "--set", "agent.lr=1e308"],
        ["agent.lr", "in (0, 1]", "1e+308"],
        {},
        id="lr",
    ),
    # A preset through --set.
    pytest.param(
        ["train", *TINY, "--set", "preset=[1,2]"], ["preset", "[1,2]"], {}, id="preset-list"
    ),
    pytest.param(["train", *TINY, "--set", "preset=foo"], ["preset", "foo"], {}, id="preset-foo"),
    pytest.param(["train", *TINY, "--set", "preset=e14"], ["preset", "e14"], {}, id="preset-e14"),
    # Env options.
    pytest.param(
        ["train", *TINY, "--set", 'env.kwargs={"render_mode": "human"}'],
        ["env.kwargs.render_mode", "'human'"],
        {},
        id="render-mode-human",
    ),
    pytest.param(
        ["train", *TINY, "--set", 'env.kwargs={"max_episode_steps": -1}'],
        ["env.kwargs.max_episode_steps", "-1"],
        {},
        id="max-episode-steps-negative",
    ),
    pytest.param(
        ["train", *TINY, "--set", 'env.kwargs={"max_episode_steps": "x"}'],
        ["env.kwargs.max_episode_steps", "'x'"],
        {},
        id="max-episode-steps-text",
    ),
    pytest.param(
        ["train", *TINY, "--set", 'env.kwargs={"bogus": 1}'],
        ["env.kwargs", "'bogus'"],
        {},
        id="env-option-unknown",
    ),
    pytest.param(
        ["train", *TINY, "--env", "rdqn/SparseChain-v0", "--set", 'env.kwargs={"n": "x"}'],
        ["env.kwargs", "n must be", "'x'"],
        {},
        id="env-option-type",
    ),
    pytest.param(
        ["train", *TINY, "--env", "rdqn/SparseChain-v0", "--set", 'env.kwargs={"n": 2}'],
        ["env.kwargs", "n must be an integer >= 3", "2"],
        {},
        id="env-option-range",
    ),
    pytest.param(
        ["train", *TINY, "--set", "env.kwargs={"], ["env.kwargs", "'{'"], {}, id="kwargs-bad-json"
    ),
    pytest.param(
        ["train", *TINY, *MARKET, "--set", 'env.kwargs={"prices": [100, 101]}'],
        ["env.kwargs", "prices has 2 values", "509"],
        {},
        id="prices-too-short",
    ),
    pytest.param(
        ["train", *TINY, *MARKET, "--set", 'env.kwargs={"prices": [100, -1]}'],
        ["env.kwargs", "prices[1] = -1.0"],
        {},
        id="prices-negative",
    ),
    # The prices CSV.
    pytest.param(
        ["train", *TINY, *MARKET, "--set", 'env.kwargs={"prices_csv": "{tmp}/missing.csv"}'],
        ["env.kwargs.prices_csv", "missing.csv", "No such file"],
        {},
        id="prices-csv-missing",
    ),
    pytest.param(
        ["train", *TINY, *MARKET, "--set", 'env.kwargs={"prices_csv": "{tmp}"}'],
        ["env.kwargs.prices_csv", "{tmp}", "directory"],
        {},
        id="prices-csv-directory",
    ),
    pytest.param(
        ["train", *TINY, *MARKET, "--set", 'env.kwargs={"prices_csv": "{tmp}/1e300.csv"}'],
        ["env.kwargs.prices_csv", "row 3: '1e300' is outside", "(line 4)"],
        {},
        id="prices-csv-1e300",
    ),
    pytest.param(
        ["train", *TINY, *MARKET, "--set", 'env.kwargs={"prices_csv": "{tmp}/latin1.csv"}'],
        ["env.kwargs.prices_csv", "not UTF-8", "0xe9"],
        {},
        id="prices-csv-latin1",
    ),
    pytest.param(
        ["train", *TINY, *MARKET, "--set", 'env.kwargs={"prices_csv": "{tmp}/ragged.csv"}'],
        ["env.kwargs.prices_csv", "line 2 has 2 field(s)"],
        {},
        id="prices-csv-ragged",
    ),
    pytest.param(
        ["train", *TINY, *MARKET, "--set", 'env.kwargs={"prices_csv": 7}'],
        ["env.kwargs.prices_csv", "7"],
        {},
        id="prices-csv-number",
    ),
    # Outputs that cannot be written.
    pytest.param(
        ["runs", "export", "{run}", "--out", "{tmp}"],
        ["--out", "{tmp}", "directory"],
        {},
        id="out-dir",
    ),
    pytest.param(
        ["runs", "export", "{run}", "--out", "/proc/rdqn-export.csv"],
        ["--out", "/proc/rdqn-export.csv", "cannot be written"],
        {},
        id="out-unwritable",
    ),
    pytest.param(
        ["runs", "export", "{run}", "--out", "{tmp}/file.txt/x.csv"],
        ["--out", "file.txt/x.csv", "cannot be written"],
        {},
        id="out-below-a-file",
    ),
    pytest.param(
        [*COMPARE, "--report", "/proc/rdqn-report.html"],
        ["--report", "/proc/rdqn-report.html", "cannot be written"],
        {},
        id="report-unwritable",
    ),
    pytest.param(
        [*COMPARE, "--report", "{tmp}"], ["--report", "{tmp}", "directory"], {}, id="report-dir"
    ),
    # Values that used to be accepted silently.
    pytest.param(
        ["train", *TINY, "--set", "replay.alpha=1.5"], ["replay.alpha", "1.5"], {}, id="alpha-1.5"
    ),
    pytest.param(
        [*COMPARE, "--threshold", "nan", "--report", "{tmp}/r.html"],
        ["--threshold", "nan"],
        {},
        id="threshold-nan",
    ),
    pytest.param(
        [*COMPARE, "--threshold", "inf", "--report", "{tmp}/r.html"],
        ["--threshold", "inf"],
        {},
        id="threshold-inf",
    ),
    # Neighbours: compare's own options.
    pytest.param(
        ["compare", *TINY, "--seeds", "0", "0", "--report", "{tmp}/r.html"],
        ["--seeds", "[0, 0]"],
        {},
        id="seeds-repeated",
    ),
    pytest.param(
        ["compare", *TINY, "--seeds", "0", "--schemes", "rank", "rank", "--report", "{tmp}/r.html"],
        ["--schemes", "['rank', 'rank']"],
        {},
        id="schemes-repeated",
    ),
    pytest.param(
        ["compare", *TINY, "--seeds", *map(str, range(21)), "--report", "{tmp}/r.html"],
        ["= 63", "limit of 60", "RDQN_LIMIT_COMPARISON_RUNS"],
        {},
        id="too-many-runs",
    ),
    pytest.param(
        [*COMPARE, "--parallel", "100000", "--report", "{tmp}/r.html"],
        ["--parallel = 100,000", "RDQN_LIMIT_THREADS"],
        {},
        id="parallel-100000",
    ),
    pytest.param(
        ["compare", *TINY, "--seeds", str(2**70), "--report", "{tmp}/r.html"],
        ["seed", str(2**70)],
        {},
        id="compare-seed-2**70",
    ),
    pytest.param([*COMPARE, "--window", "x"], ["--window", "'x'"], {}, id="window-text"),
    # Neighbours: --set itself.
    pytest.param(
        ["train", *TINY, "--set", "replay=3"],
        ["'replay' is a group", "replay.alpha"],
        {},
        id="set-group",
    ),
    pytest.param(
        ["train", *TINY, "--set", "replay.alfa=1"],
        ["replay.alfa", "did you mean 'replay.alpha'"],
        {},
        id="set-typo",
    ),
    pytest.param(
        ["train", *TINY, "--set", "agent"], ["--set", "KEY=VALUE", "'agent'"], {}, id="set-no-value"
    ),
    pytest.param(
        ["train", *TINY, "--set", "replay.alpha.x=1"], ["replay.alpha.x"], {}, id="set-below-a-leaf"
    ),
    # Neighbours: names and ids.
    pytest.param(
        ["train", *TINY, "--name", "x" * 100_000],
        ["--name", "200", "(100,002 characters)"],
        {},
        id="name-100k",
    ),
    pytest.param(
        ["train", *TINY, "--name", "two\nlines"], ["--name", "'two\\nlines'"], {}, id="name-newline"
    ),
    pytest.param(["runs", "show", "x" * 5000], ["x" * 20], {}, id="show-long-id"),
    # The server's limits, set badly.
    pytest.param(
        ["train", *TINY],
        ["RDQN_LIMIT_CAPACITY", "'lots'"],
        {"RDQN_LIMIT_CAPACITY": "lots"},
        id="limit-var-bad",
    ),
    pytest.param(
        ["train", *TINY],
        ["RDQN_LIMIT_CAPACTY", "not a limit"],
        {"RDQN_LIMIT_CAPACTY": "5"},
        id="limit-var-typo",
    ),
    pytest.param(
        ["train", *TINY],
        ["replay.capacity = 256", "limit of 100"],
        {"RDQN_LIMIT_CAPACITY": "100"},
        id="limit-var-low",
    ),
    pytest.param(
        ["train", *TINY, *MARKET, "--set", 'env.kwargs={"prices": [100, 101, 102]}'],
        ["env.kwargs.prices", "3", "RDQN_LIMIT_CSV_ROWS"],
        {"RDQN_LIMIT_CSV_ROWS": "2"},
        id="limit-prices-rows",
    ),
    # Configs that can never make an update used to end 'finished, 0 updates'.
    pytest.param(
        ["train", *TINY, "--set", "train.learning_starts=1180591620717411303424"],
        ["train.learning_starts = 1180591620717411303424", "train.total_steps = 200", "no"],
        {},
        id="never-learns-warm-up",
    ),
    pytest.param(
        ["train", *TINY, "--set", "train.train_every=1180591620717411303424"],
        ["train.train_every = 1180591620717411303424", "train.total_steps = 200"],
        {},
        id="never-learns-train-every",
    ),
    pytest.param(
        ["train", "--steps", "20", "--quiet"],
        ["train.learning_starts = 32", "train.total_steps = 20", "no learner update"],
        {},
        id="never-learns-short-budget",
    ),
    pytest.param(
        [*COMPARE, "--set", "train.train_every=201"],
        ["train.train_every = 201", "train.total_steps = 200", "no learner update"],
        {},
        id="never-learns-compare",
    ),
    pytest.param(
        ["resume", "0123456789ab", "--threads", "100000"],
        ["--threads = 100,000"],
        {},
        id="resume-threads",
    ),
]


UNTOUCHED_HOME = Path("/nonexistent-rdqn-test-home")


def write_inputs(tmp: Path, args: list[str]) -> str:
    """The files the case reads and, for the export cases, one filed run (no training)."""
    if any("{tmp}/" in arg for arg in args):
        (tmp / "1e300.csv").write_text("price\n100\n101\n1e300\n" + "102\n" * 600)
        (tmp / "latin1.csv").write_bytes("prix\xe9,price\n1,100\n".encode("latin-1"))
        (tmp / "ragged.csv").write_text("price\n" + "1,2.0\n" * 600)
        (tmp / "file.txt").write_text("a file, not a folder")
    if "{run}" not in args:
        return ""
    with RunStore(tmp / "rdqn.db") as store:
        return store.create_run(**RunConfig().record_fields())


def run_ids(tmp: Path) -> list[str]:
    """The runs filed in the store under ``tmp`` (read directly: opening a RunStore costs more)."""
    if not (tmp / "rdqn.db").exists():
        return []
    with contextlib.closing(sqlite3.connect(tmp / "rdqn.db")) as db:
        return sorted(row[0] for row in db.execute("SELECT id FROM runs"))


@pytest.mark.parametrize(("args", "needles", "environ"), CASES + generated_cases())
def test_bad_invocation_is_one_line_exit_2(
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    needles: list[str],
    environ: dict[str, str],
) -> None:
    for name in [key for key in os.environ if key.startswith("RDQN_LIMIT_")]:
        monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    # Most cases need no folder at all: a refused train or compare never opens its store (a
    # compare whose --report cannot be written opens it, and stops before filing a run).
    uses_files = args[0] == "runs" or "--report" in args
    uses_files = uses_files or any("{tmp}" in arg or "{run}" in arg for arg in args)
    home = request.getfixturevalue("tmp_path") if uses_files else UNTOUCHED_HOME
    run = write_inputs(home, args) if uses_files else ""
    before = run_ids(home)
    fill = {"{tmp}": str(home), "{run}": run}
    argv = ["--home", str(home)]
    for arg in args:
        for key, value in fill.items():
            arg = arg.replace(key, value)
        argv.append(arg)

    code = main(argv)

    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    assert "Traceback" not in err
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rdqn: error: "), err
    for needle in needles:
        for key, value in fill.items():
            needle = needle.replace(key, value)
        assert needle in lines[0], (needle, lines[0])
    assert run_ids(home) == before  # nothing was filed (or trained)
    assert uses_files or not home.exists()
    assert not (home / "r.html").exists()
