"""Bad command lines: each is refused with exit status 2 and one ``rdqn: error:`` line that names
the parameter and the bad value, no traceback, and no run left in the store.

Issue 11, values accepted silently before: ``replay.alpha=1.5``, ``preset=foo`` through
``--set``, ``max_episode_steps=-1``, ``compare --threshold nan``, a budget of 10**23 steps
(trains forever; the server's limit, `rdqn.limits`) and ``train.total_steps=null`` (the preset's
budget, silently).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from rdqn.cli import main
from rdqn.runs.store import RunStore

TINY = ["--steps", "200", "--quiet", "--set", "train.learning_starts=64"]
TINY += ["--set", "replay.capacity=256", "--set", "replay.batch_size=16"]
COMPARE = ["compare", *TINY, "--seeds", "0", "--schemes", "uniform"]


@pytest.fixture(autouse=True)
def _restore_torch_threads() -> Iterator[None]:
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


CASES = [
    pytest.param(
        ["train", *TINY, "--set", "replay.alpha=1.5"], ["replay.alpha", "1.5"], id="alpha-1.5"
    ),
    pytest.param(["train", *TINY, "--set", "preset=foo"], ["preset", "foo"], id="preset-foo"),
    pytest.param(["train", *TINY, "--set", "preset=e14"], ["preset", "e14"], id="preset-e14"),
    pytest.param(
        ["train", *TINY, "--set", 'env.kwargs={"max_episode_steps": -1}'],
        ["env.kwargs.max_episode_steps", "-1"],
        id="max-episode-steps-negative",
    ),
    pytest.param(
        [*COMPARE, "--threshold", "nan", "--report", "{tmp}/r.html"],
        ["--threshold", "nan"],
        id="threshold-nan",
    ),
    pytest.param(
        [*COMPARE, "--threshold", "inf", "--report", "{tmp}/r.html"],
        ["--threshold", "inf"],
        id="threshold-inf",
    ),
    pytest.param(["train", "--quiet", "--steps", "1e23"], ["--steps", "'1e23'"], id="steps-1e23"),
    pytest.param(
        ["train", "--quiet", "--steps", "100000000000000000000000"],
        ["train.total_steps = 100,000,000,000,000,000,000,000", "RDQN_LIMIT_TOTAL_STEPS"],
        id="steps-10**23",
    ),
    pytest.param(
        ["train", *TINY, "--set", "train.total_steps=null"],
        ["train.total_steps", "None"],
        id="steps-null",
    ),
]


@pytest.mark.parametrize(("args", "needles"), CASES)
def test_bad_invocation_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needles: list[str]
) -> None:
    code = main(["--home", str(tmp_path), *(a.replace("{tmp}", str(tmp_path)) for a in args)])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == "" and "Traceback" not in err
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1 and lines[0].startswith("rdqn: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    if (tmp_path / "rdqn.db").exists():
        with RunStore(tmp_path / "rdqn.db") as store:
            assert store.list_runs().empty
