"""A stopped run's checkpoint damaged or edited, or its store copied elsewhere.

With 10 flipped bits in a stopped run's checkpoint, ``python -m rdqn resume ID`` trained on
silently for some flips and died with a segmentation fault for others. Now a checkpoint carries
the SHA-256 of its bytes (`rdqn.runs.checkpoints`), checked before anything is unpickled: a
damaged one is refused in one line naming the run and the file, exit status 2, and the run stays
listed as it was, rows and file untouched. A checkpoint without a valid digest line (its line
damaged, or an older rdqn's) is refused the same way: it used to be loaded unchecked. A
checkpoint edited and saved again with a valid digest (anyone with access to the folder can) is
checked value by value before any of it is used or any row dropped (`rdqn.runs.resume`): each of
the crafted cases is refused in one line, and nothing changes. A copied home resumes from its own
files: the store records them relative to its folder.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch

from rdqn.cli import main
from rdqn.runs.checkpoints import CHECKPOINT_FORMAT, load_checkpoint, save_checkpoint
from rdqn.runs.lifecycle import RecordedRun
from rdqn.runs.resume import resume_blocker
from rdqn.runs.store import RunStore
from tests.run_helpers import tiny

BUDGET = 400
STOP_AT = 150


@pytest.fixture(autouse=True)
def _restore_torch_threads() -> Iterator[None]:
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def stopped_run(home: Path) -> str:
    """A run of ``BUDGET`` env steps stopped at ``STOP_AT``, as Ctrl-C stops one."""
    with RunStore(home / "rdqn.db") as store:
        run = RecordedRun(tiny(BUDGET, **{"train.histogram_every": 25}), store)
        run.open().run(steps=STOP_AT)
        run.record_progress()
        run.close("stopped", "stopped by Ctrl-C")
        assert run.id is not None
        return run.id


@pytest.fixture
def stopped(tmp_path: Path) -> tuple[Path, str, Path]:
    """A home with one stopped run: the home, the run's id and its checkpoint file."""
    home = tmp_path / "home"
    run_id = stopped_run(home)
    return home, run_id, home / "checkpoints" / f"{run_id}.pt"


def everything_stored(home: Path, run_id: str) -> tuple[Any, ...]:
    with RunStore(home / "rdqn.db") as store:
        record = store.get_run(run_id)
        return (
            record,
            store.metrics.episodes(run_id),
            store.metrics.steps(run_id),
            store.list_runs(),
        )


def assert_same_store(before: tuple[Any, ...], after: tuple[Any, ...]) -> None:
    assert before[0] == after[0]
    for old, new in zip(before[1:], after[1:], strict=True):
        pd.testing.assert_frame_equal(old, new)


def resume(home: Path, run_id: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["--home", str(home), "resume", run_id, "--quiet"])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code: int, out: str, err: str) -> str:
    assert code == 2 and out == "", (code, out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rdqn: error: "), err
    return lines[0]


@pytest.mark.parametrize("seed", range(8))
def test_ten_flipped_bits_are_refused_in_one_line_and_change_nothing(
    seed: int,
    stopped: tuple[Path, str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, run_id, checkpoint = stopped
    data = bytearray(checkpoint.read_bytes())
    rng = random.Random(seed)
    for bit in rng.sample(range(len(data) * 8), 10):
        data[bit // 8] ^= 1 << (bit % 8)
    checkpoint.write_bytes(bytes(data))
    before = everything_stored(home, run_id)

    line = assert_one_line(*resume(home, run_id, capsys))

    assert line == (
        f"rdqn: error: cannot resume run {run_id}: checkpoint {checkpoint} is damaged (digest "
        "mismatch); the run stays listed with its rows"
    )
    assert_same_store(before, everything_stored(home, run_id))
    assert checkpoint.read_bytes() == bytes(data)
    assert before[0].status == "stopped"


DIGEST_PREFIX = b"\nrdqn-sha256:"


def test_a_damaged_digest_line_does_not_pass_for_an_older_checkpoint(
    stopped: tuple[Path, str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: a checkpoint whose digest line did not parse was taken for an older rdqn's
    (no digest) and loaded unchecked: one flipped bit in that line and one in an observation
    resumed silently. Now a checkpoint without a valid digest is refused."""
    home, run_id, checkpoint = stopped
    data = bytearray(checkpoint.read_bytes())
    line = data.rfind(DIGEST_PREFIX)
    data[line // 2] ^= 0x01  # inside the archive: the replay memory
    data[line + 1] ^= 0x01  # "rdqn-sha256:" no longer reads as the digest's prefix
    checkpoint.write_bytes(bytes(data))
    before = everything_stored(home, run_id)

    line_said = assert_one_line(*resume(home, run_id, capsys))

    assert line_said == (
        f"rdqn: error: cannot resume run {run_id}: checkpoint {checkpoint} has no valid digest: "
        "damaged, or written by an older rdqn; the run stays listed with its rows"
    )
    assert_same_store(before, everything_stored(home, run_id))


def write_without_digest(path: Path, state: dict[str, Any]) -> None:
    """``state`` as a checkpoint of an rdqn that wrote no digest."""
    torch.save({"format": CHECKPOINT_FORMAT, "version": 2, **state}, path)


def test_a_checkpoint_without_a_digest_is_refused_in_one_line(
    stopped: tuple[Path, str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """An older rdqn's checkpoint (no digest) cannot be told from a damaged one: refused before
    anything is unpickled, the run kept as it was (it used to be restored unchecked)."""
    home, run_id, checkpoint = stopped
    write_without_digest(checkpoint, load_checkpoint(checkpoint))
    before = everything_stored(home, run_id)

    line = assert_one_line(*resume(home, run_id, capsys))

    assert line == (
        f"rdqn: error: cannot resume run {run_id}: checkpoint {checkpoint} has no valid digest: "
        "damaged, or written by an older rdqn; the run stays listed with its rows"
    )
    assert_same_store(before, everything_stored(home, run_id))


# -- well-formed but wrong: edited and saved again with a valid digest -------------------------
# Each case edits one part of a stopped run's checkpoint as someone with access to the folder
# could, and saves it with a valid digest. Before, such checkpoints resumed silently (a run
# "finished" at 10^12 env steps, its rows dropped), or failed later as a 'failed' run no longer
# resumable (a NaN weight, a NaN learning rate, an action out of range), or crashed.


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit setting the entry at the dotted ``path`` to ``value``."""

    def edit(state: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = state
        for key in parents:
            node = node[int(key)] if isinstance(node, list) or key.isdigit() else node[key]
        node[int(last) if last.isdigit() else last] = value

    return edit


def _tensor(path: str, change: Callable[[torch.Tensor], None]) -> Callable[[dict[str, Any]], None]:
    """An edit changing the tensor at the dotted ``path`` in place."""

    def edit(state: dict[str, Any]) -> None:
        node: Any = state
        for key in path.split("."):
            node = node[int(key)] if isinstance(node, list) or key.isdigit() else node[key]
        change(node)

    return edit


def _last_weight(part: str, value: float) -> Callable[[dict[str, Any]], None]:
    """An edit setting the first value of the last tensor of ``agent.<part>`` (its output)."""

    def edit(state: dict[str, Any]) -> None:
        weights = state["agent"][part]
        weights[list(weights)[-1]].view(-1)[0] = value

    return edit


def _first(value: float) -> Callable[[torch.Tensor], None]:
    def change(tensor: torch.Tensor) -> None:
        tensor.view(-1)[0] = value

    return change


def _counters(**counts: int) -> Callable[[dict[str, Any]], None]:
    def edit(state: dict[str, Any]) -> None:
        state["counters"].update(counts)

    return edit


def _earlier(state: dict[str, Any]) -> None:
    state["counters"]["env_steps"] -= 1


def _short(path: str, keep: int) -> Callable[[dict[str, Any]], None]:
    def edit(state: dict[str, Any]) -> None:
        node: Any = state
        *parents, last = path.split(".")
        for key in parents:
            node = node[key]
        node[last] = node[last][:keep]

    return edit


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    def edit(state: dict[str, Any]) -> None:
        node: Any = state
        *parents, last = path.split(".")
        for key in parents:
            node = node[key]
        del node[last]

    return edit


def _extra_param_group(state: dict[str, Any]) -> None:
    groups = state["agent"]["optimizer"]["param_groups"]
    groups.append({**groups[0], "params": []})


def _weights_of_another_shape(state: dict[str, Any]) -> None:
    online = state["agent"]["online"]
    online[next(iter(online))] = torch.zeros(3, 1)


OPTIMIZER = "agent.optimizer"
TELEMETRY = "resume.telemetry"
STORAGE = "resume.replay.storage"
NAN, INF = float("nan"), float("inf")
CRAFTED: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    # counters: what the store recorded for this checkpoint, within the budget
    "env steps 10^12": (_counters(env_steps=10**12), "counters"),
    "counters zero": (_counters(env_steps=0, updates=0, episodes=0), "counters"),
    "env steps one earlier": (_earlier, "counters"),
    "updates 10^9": (_counters(updates=10**9), "updates"),
    "episodes 10^6": (_counters(episodes=10**6), "episodes"),
    "no updates counter": (_delete("counters.updates"), "counters"),
    # the agent: weights, optimizer, its own counter and generator
    "NaN weight": (_last_weight("online", NAN), "must be finite"),
    "inf target weight": (_last_weight("target", INF), "must be finite"),
    "weights of another shape": (_weights_of_another_shape, "agent"),
    "NaN learning rate": (_set(f"{OPTIMIZER}.param_groups.0.lr", NAN), "lr"),
    "huge learning rate": (_set(f"{OPTIMIZER}.param_groups.0.lr", 1e30), "lr"),
    "extra param group": (_extra_param_group, "param_groups"),
    "exp_avg_sq -1": (
        _tensor(f"{OPTIMIZER}.state.2.exp_avg_sq", lambda t: t.fill_(-1.0)),
        "exp_avg_sq",
    ),
    "exp_avg of another shape": (_set(f"{OPTIMIZER}.state.2.exp_avg", torch.zeros(3)), "exp_avg"),
    "NaN exp_avg": (_tensor(f"{OPTIMIZER}.state.0.exp_avg", _first(NAN)), "exp_avg"),
    "NaN Adam step": (_set(f"{OPTIMIZER}.state.0.step", torch.tensor(NAN)), "step"),
    "negative Adam step": (_set(f"{OPTIMIZER}.state.1.step", torch.tensor(-3.0)), "step"),
    "agent updates -7": (_set("agent.updates", -7), "updates"),
    "exploration generator": (_set("agent.explore_rng.state", "zzz"), "explore_rng"),
    # the replay memory
    "action out of range": (_tensor(f"{STORAGE}.actions", _first(99)), "actions"),
    "episode step 10^6": (_tensor(f"{STORAGE}.episode_step", _first(10**6)), "episode_step"),
    "next episode step": (_set(f"{STORAGE}.next_episode_step", 10**6), "episode"),
    "writes 3": (_set(f"{STORAGE}.writes", 3), "writes"),
    "NaN sum node": (_set("resume.replay.sampler.sum_nodes.1", NAN), "sum_nodes"),
    "no replay": (_set("resume.replay", {}), "replay"),
    # generators
    "env generator": (_set("resume.env_rng.state.state", -1), "env_rng"),
    "generator state text": (_set("resume.env_rng", {"bit_generator": "PCG64"}), "env_rng"),
    # the episode under way, wall time
    "episode steps -5": (_set("resume.episode_steps", -5), "episode_steps"),
    "episode steps 10^6": (_set("resume.episode_steps", 10**6), "episode_steps"),
    "NaN wall time": (_set("resume.wall_time", NAN), "wall_time"),
    # telemetry: consistent with the counters, finite
    "10 episode returns": (_short(f"{TELEMETRY}.episode_returns", 10), "episode_returns"),
    "NaN episode return": (_tensor(f"{TELEMETRY}.episode_returns", _first(NAN)), "episode_returns"),
    "negative episode length": (
        _tensor(f"{TELEMETRY}.episode_lengths", _first(-4)),
        "episode_lengths",
    ),
    "NaN loss": (_tensor(f"{TELEMETRY}.losses", _first(NAN)), "losses"),
    "short log": (_short(f"{TELEMETRY}.log_updates", 2), "log_updates"),
    "priority history shape": (
        _set(f"{TELEMETRY}.priority_history.counts", torch.zeros(74, 3, dtype=torch.float64)),
        "priority_history",
    ),
    "NaN age count": (_tensor(f"{TELEMETRY}.age_counts", _first(NAN)), "age_counts"),
    "no telemetry": (_delete(TELEMETRY), "telemetry"),
    # timings
    "negative timing count": (_set("resume.timings.counts.act", -3), "timings"),
    "NaN timing total": (_set("resume.timings.totals.act", NAN), "timings"),
}


@pytest.fixture(scope="module")
def stopped_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One stopped run's home, trained once for all the crafted cases (each works on a copy)."""
    home = tmp_path_factory.mktemp("stopped") / "home"
    return home, stopped_run(home)


@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_well_formed_but_wrong_checkpoint_is_refused_in_one_line(
    case: str,
    stopped_home: tuple[Path, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Edited and saved again with a valid digest: every loaded value is checked before any of
    it is used, so the resume is refused in one line naming the run, the file and what is
    wrong, and nothing changes: the run stays 'stopped', listed, its rows and file kept."""
    edit, said = CRAFTED[case]
    original, run_id = stopped_home
    home = tmp_path / "home"
    shutil.copytree(original, home)
    checkpoint = home / "checkpoints" / f"{run_id}.pt"
    state = load_checkpoint(checkpoint)
    edit(state)
    save_checkpoint(state, checkpoint)
    data = checkpoint.read_bytes()
    before = everything_stored(home, run_id)

    line = assert_one_line(*resume(home, run_id, capsys))

    assert line.startswith(f"rdqn: error: cannot resume run {run_id}: checkpoint {checkpoint} ")
    assert said in line, line
    assert line.endswith("; the run stays listed with its rows"), line
    assert_same_store(before, everything_stored(home, run_id))
    assert before[0].status == "stopped"
    assert checkpoint.read_bytes() == data


def test_a_copied_home_resumes_from_its_own_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It resumed from the original folder's file, and failed once that folder was gone."""
    original = tmp_path / "a" / "home"
    run_id = stopped_run(original)
    moved = tmp_path / "b" / "moved"
    shutil.copytree(original, moved)
    shutil.rmtree(original)

    code, out, err = resume(moved, run_id, capsys)

    assert code == 0, err
    assert out.startswith(f"run {run_id}: finished, {BUDGET} env steps")
    with RunStore(moved / "rdqn.db") as store:
        record = store.get_run(run_id)
    assert (record.status, record.env_steps) == ("finished", BUDGET)
    assert record.checkpoint_path == str(moved / "checkpoints" / f"{run_id}.pt")
    assert not original.exists()


def test_a_store_that_recorded_absolute_paths_still_resumes(
    stopped: tuple[Path, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stores written before paths were relative hold absolute ones: read as they are."""
    home, run_id, checkpoint = stopped
    elsewhere = tmp_path / "elsewhere.pt"
    shutil.move(checkpoint, elsewhere)
    with closing(sqlite3.connect(home / "rdqn.db")) as raw:
        raw.execute("UPDATE runs SET checkpoint_path = ?", (str(elsewhere),))
        raw.commit()
    with RunStore(home / "rdqn.db") as store:
        assert store.get_run(run_id).checkpoint_path == str(elsewhere)
        assert resume_blocker(store, run_id) is None

    code, out, err = resume(home, run_id, capsys)

    assert code == 0, err
    with closing(sqlite3.connect(home / "rdqn.db")) as raw:
        (stored,) = raw.execute("SELECT checkpoint_path FROM runs").fetchone()
    assert stored == f"checkpoints/{run_id}.pt"  # its next checkpoint is the store's own
