"""Tests for rdqn.runs.checkpoints: round trip, atomic replacement, and every kind of bad file."""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import subprocess
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from rdqn.runs.checkpoints import (
    CHECKPOINT_FORMAT,
    CHECKPOINT_VERSION,
    CheckpointError,
    checkpoint_bytes,
    checkpoint_digest,
    load_checkpoint,
    load_checkpoint_bytes,
    remove_orphan_temporaries,
    save_checkpoint,
    write_checkpoint,
)


def training_state(seed: int = 0) -> dict[str, Any]:
    torch.manual_seed(seed)
    net = nn.Linear(3, 2)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    net(torch.ones(4, 3)).sum().backward()
    optimizer.step()
    return {
        "online": net.state_dict(),
        "optimizer": optimizer.state_dict(),
        "torch_rng": torch.Generator().manual_seed(seed).get_state(),
        "numpy_rng": np.random.default_rng(seed).bit_generator.state,
        "counters": {"updates": 10, "env_steps": 40, "episodes": 2},
        "config": {"alpha": 0.6, "hidden": (128, 128), "name": "e14", "clip": None},
        "priorities": torch.arange(5, dtype=torch.float64),
    }


def assert_same(a: Any, b: Any) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, list | tuple):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        assert a == b


def test_round_trip(tmp_path: Path) -> None:
    state = training_state()
    path = save_checkpoint(state, tmp_path / "nested" / "dir" / "run.pt")
    assert path == tmp_path / "nested" / "dir" / "run.pt"
    loaded = load_checkpoint(path)
    assert_same(state, loaded)
    assert "format" not in loaded and "version" not in loaded
    net = nn.Linear(3, 2)
    net.load_state_dict(loaded["online"])
    assert isinstance(loaded["counters"]["updates"], int)


def test_file_carries_the_marker(tmp_path: Path) -> None:
    path = save_checkpoint({"x": torch.ones(2)}, tmp_path / "a.pt")
    raw = torch.load(path, weights_only=True)
    assert raw["format"] == CHECKPOINT_FORMAT == "rdqn-checkpoint"
    assert raw["version"] == CHECKPOINT_VERSION == 3


def save_with_digest(payload: object, path: Path) -> None:
    """``payload`` saved by ``torch.save`` as it is (no marker added), with a valid digest line."""
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    archive = buffer.getvalue()
    path.write_bytes(archive + b"\nrdqn-sha256:" + checkpoint_digest(archive).encode() + b"\n")


def test_a_version_1_checkpoint_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "old.pt"
    payload = {"format": CHECKPOINT_FORMAT, "version": 1, "counters": {"env_steps": 5}}
    save_with_digest(payload, path)
    assert load_checkpoint(path) == {"counters": {"env_steps": 5}}


def test_bytes_load_like_a_file(tmp_path: Path) -> None:
    state = training_state()
    assert_same(load_checkpoint_bytes(checkpoint_bytes(state)), state)
    with pytest.raises(CheckpointError, match="the bytes of run x has no valid digest"):
        load_checkpoint_bytes(b"PK\x03\x04 garbage", source="the bytes of run x")


def test_tensors_load_on_the_cpu(tmp_path: Path) -> None:
    path = save_checkpoint({"x": torch.ones(2)}, tmp_path / "a.pt")
    assert load_checkpoint(str(path))["x"].device == torch.device("cpu")


def test_overwrite_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / "run.pt"
    save_checkpoint({"step": 1}, path)
    save_checkpoint({"step": 2}, path)
    assert load_checkpoint(path) == {"step": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["run.pt"]


def test_crash_mid_write_keeps_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.pt"
    save_checkpoint({"step": 1, "w": torch.ones(3)}, path)

    def crashing_save(obj: object, f: Any, *args: object, **kwargs: object) -> None:
        f.write(b"PK\x03\x04 half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", crashing_save)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint({"step": 2, "w": torch.zeros(3)}, path)
    monkeypatch.undo()
    assert_same(load_checkpoint(path), {"step": 1, "w": torch.ones(3)})
    assert [p.name for p in tmp_path.iterdir()] == ["run.pt"]


def test_crash_on_first_write_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(obj: object, f: Any, *args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint({"step": 1}, tmp_path / "run.pt")
    assert list(tmp_path.iterdir()) == []


def test_the_temporary_file_names_its_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real_replace = os.replace

    def spy(source: str, target: object) -> None:
        seen.append(Path(source).name)
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", spy)
    write_checkpoint(checkpoint_bytes({"step": 1}), tmp_path / "abc.pt")
    (name,) = seen
    assert name.startswith(f".abc.pt.{os.getpid()}.") and name.endswith(".tmp")


def test_orphan_temporaries_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    """Kept: a live writer's fresh file, an old-style name that is fresh, checkpoints, other
    files. Removed: a dead writer's file, and any temporary file older than the limit."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    me, dead = os.getpid(), child.pid
    names = {
        "live": f".run.pt.{me}.k2j_x9ab.tmp",
        "dead": f".run.pt.{dead}.a8b7c6d5.tmp",
        "legacy fresh": ".run.pt.q1w2e3r4.tmp",
        "legacy old": ".old.pt.z9y8x7w6.tmp",
        "live but old": f".other.pt.{me}.m1n2b3v4.tmp",
        "checkpoint": "run.pt",
        "user file": "notes.tmp",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"x" * 64)
    hour_ago = time.time() - 3600
    for key in ("legacy old", "live but old"):
        os.utime(tmp_path / names[key], (hour_ago, hour_ago))
    removed = remove_orphan_temporaries(tmp_path)
    gone = {"dead", "legacy old", "live but old"}
    assert sorted(p.name for p in removed) == sorted(names[k] for k in gone)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        names[k] for k in names if k not in gone
    )
    assert remove_orphan_temporaries(tmp_path / "missing") == []


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nope.pt"
    with pytest.raises(CheckpointError, match=r"checkpoint file not found: .*nope\.pt"):
        load_checkpoint(path)


def test_checkpoint_error_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        load_checkpoint(tmp_path / "nope.pt")


def test_directory_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="cannot read checkpoint"):
        load_checkpoint(tmp_path)


@pytest.mark.parametrize("cut", ["empty", "three bytes", "half"])
def test_truncated_file_is_corrupt(tmp_path: Path, cut: str) -> None:
    path = save_checkpoint(training_state(), tmp_path / "run.pt")
    data = path.read_bytes()
    path.write_bytes(data[: {"empty": 0, "three bytes": 3, "half": len(data) // 2}[cut]])
    said = "has no valid digest: damaged" if cut == "half" else "is corrupt or truncated"
    with pytest.raises(CheckpointError, match=rf"run\.pt {said}"):
        load_checkpoint(path)


def test_scrambled_archive_is_damaged(tmp_path: Path) -> None:
    path = save_checkpoint({"w": torch.arange(1000.0)}, tmp_path / "run.pt")
    data = bytearray(path.read_bytes())
    data[4:200] = bytes(196)
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"run\.pt is damaged \(digest mismatch\)"):
        load_checkpoint(path)
    path.write_bytes(bytes(data[:-DIGEST_LINE]))  # as an older rdqn wrote it: no digest
    with pytest.raises(CheckpointError, match="has no valid digest"):
        load_checkpoint(path)


DIGEST_LINE = len("\nrdqn-sha256:") + 64 + 1


def test_a_checkpoint_ends_with_the_digest_of_its_archive(tmp_path: Path) -> None:
    path = save_checkpoint({"w": torch.arange(10.0)}, tmp_path / "run.pt")
    data = path.read_bytes()
    archive, line = data[:-DIGEST_LINE], data[-DIGEST_LINE:]
    assert line == b"\nrdqn-sha256:" + hashlib.sha256(archive).hexdigest().encode() + b"\n"
    assert checkpoint_digest(archive) == hashlib.sha256(archive).hexdigest()
    assert torch.equal(torch.load(path, weights_only=True)["w"], torch.arange(10.0))


@pytest.mark.parametrize("position", [0.0, 0.1, 0.37, 0.5, 0.81, 0.999, 1.0])
def test_a_flipped_bit_anywhere_is_refused_before_unpickling(
    tmp_path: Path, position: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: flipped bits let a resumed run train on, or crashed it. Every byte of the file
    is covered, the digest line too; torch's unpickler never sees damaged bytes."""
    path = save_checkpoint(training_state(), tmp_path / "run.pt")
    data = bytearray(path.read_bytes())
    at = min(int(position * len(data)), len(data) - 2)  # the last byte ends the line
    data[at] ^= 0x10
    path.write_bytes(bytes(data))

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("damaged bytes reached torch.load")

    monkeypatch.setattr(torch, "load", never)
    # A bit of the line's hex digits leaves no digest to compare: refused all the same.
    refused = r"(is damaged \(digest mismatch\)|has no valid digest: damaged)"
    with pytest.raises(CheckpointError, match=rf"run\.pt {refused}"):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match=rf"the bytes of run x {refused}"):
        load_checkpoint_bytes(bytes(data), source="the bytes of run x")


NO_DIGEST = r"has no valid digest: damaged, or written by an older rdqn"


def test_a_checkpoint_without_a_digest_is_refused(tmp_path: Path) -> None:
    """Saved before checkpoints carried a digest, or its digest line damaged: nothing tells the
    two apart, and neither is unpickled unchecked."""
    path = tmp_path / "old.pt"
    torch.save({"format": CHECKPOINT_FORMAT, "version": 2, "counters": {"env_steps": 5}}, path)
    with pytest.raises(CheckpointError, match=rf"old\.pt {NO_DIGEST}$"):
        load_checkpoint(path)


@pytest.mark.parametrize(
    "where",
    ["newline", "r of rdqn", "dash", "colon", "last newline", "a digit", "a digit made a letter"],
)
def test_a_damaged_digest_line_is_refused_not_taken_for_an_older_checkpoint(
    tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a digest line that no longer parsed (one flipped bit in its prefix) was taken
    for an older rdqn's missing line and the archive loaded unchecked, so a second flipped bit
    in the replay memory resumed silently. Every byte of the line matters."""
    path = save_checkpoint({"w": torch.arange(1000.0)}, tmp_path / "run.pt")
    data = bytearray(path.read_bytes())
    line = len(data) - DIGEST_LINE
    offset, mask = {
        "newline": (0, 0x01),
        "r of rdqn": (1, 0x01),
        "dash": (5, 0x01),
        "colon": (12, 0x01),
        "last newline": (DIGEST_LINE - 1, 0x01),
        "a digit": (13, 0x40),  # a hex digit made a character that is no digit
        "a digit made a letter": (40, 0x00),
    }[where]
    if where == "a digit made a letter":
        data[line + offset] = ord("G")  # upper case: not what the digest is written as
    else:
        data[line + offset] ^= mask
    data[line // 2] ^= 0x01  # and one bit of the archive
    path.write_bytes(bytes(data))

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("bytes without a valid digest reached torch.load")

    monkeypatch.setattr(torch, "load", never)
    with pytest.raises(CheckpointError, match=rf"run\.pt {NO_DIGEST}$"):
        load_checkpoint(path)


def test_plain_pickle_is_foreign(tmp_path: Path) -> None:
    path = tmp_path / "object.pkl"
    path.write_bytes(pickle.dumps({"model": OrderedDict(w=[1, 2])}))
    with pytest.raises(CheckpointError, match=r"object\.pkl is not an rdqn checkpoint"):
        load_checkpoint(path)


def test_text_file_is_foreign(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("alpha = 0.6\n")
    with pytest.raises(CheckpointError, match="not an rdqn checkpoint"):
        load_checkpoint(path)


class Payload:
    """Stands for an arbitrary object: weights_only loading must refuse to rebuild it."""


def test_torch_file_with_arbitrary_objects_is_foreign(tmp_path: Path) -> None:
    path = tmp_path / "foreign.pt"
    save_with_digest({"format": CHECKPOINT_FORMAT, "version": 1, "obj": Payload()}, path)
    with pytest.raises(CheckpointError, match="not an rdqn checkpoint: it holds objects"):
        load_checkpoint(path)


@pytest.mark.parametrize(
    "content",
    [{"w": torch.ones(2)}, torch.ones(2), [1, 2], {"format": "other", "version": 1}],
    ids=["dict", "tensor", "list", "other-format"],
)
def test_torch_file_without_marker_is_foreign(tmp_path: Path, content: object) -> None:
    path = tmp_path / "plain.pt"
    save_with_digest(content, path)
    with pytest.raises(CheckpointError, match="not an rdqn checkpoint: a torch file without"):
        load_checkpoint(path)


def test_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.pt"
    save_with_digest({"format": CHECKPOINT_FORMAT, "version": 4}, path)
    with pytest.raises(CheckpointError, match="has version 4; this rdqn reads versions 1 to 3"):
        load_checkpoint(path)


def test_reserved_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"reserved checkpoint keys \['version'\]"):
        save_checkpoint({"version": 3}, tmp_path / "a.pt")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("state", "where"),
    [
        ({"buffer": np.zeros(3)}, r"state\['buffer'\]"),
        ({"x": [1, np.float64(2.0)]}, r"state\['x'\]\[1\]"),
        ({"obj": Payload()}, r"state\['obj'\]"),
    ],
)
def test_state_that_could_not_be_loaded_back_is_refused(
    tmp_path: Path, state: dict[str, Any], where: str
) -> None:
    with pytest.raises(TypeError, match=where + ".*cannot read back"):
        save_checkpoint(state, tmp_path / "a.pt")
    assert list(tmp_path.iterdir()) == []
