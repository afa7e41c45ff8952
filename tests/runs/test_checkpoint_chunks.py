"""Tests for rdqn.runs.checkpoint_chunks: a replay memory saved in chunk files, only the chunks
that changed written, checked when loaded, and no crash able to lose the previous checkpoint.
(tests/runs/conftest.py makes chunks 1 KiB.)"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from rdqn.runs import checkpoints, lifecycle
from rdqn.runs.checkpoint_chunks import REFERENCE, chunk_folder, join, reader, split
from rdqn.runs.checkpoints import (
    CheckpointError,
    checkpoint_parts,
    load_checkpoint,
    load_checkpoint_bytes,
    remove_orphan_temporaries,
    save_checkpoint,
    verify_checkpoint,
    write_checkpoint,
)
from rdqn.runs.lifecycle import RecordedRun, run_to_end
from rdqn.runs.store import RunStore
from rdqn.serve.protocol import RecordRelay, apply_record
from tests.run_helpers import tiny
from tests.runs.test_checkpoints import assert_same


def replay_state(seed: int = 0) -> dict[str, Any]:
    """A resume state whose replay memory has tensors of several dtypes, above and below a
    chunk (1 KiB here)."""
    generator = torch.Generator().manual_seed(seed)
    replay = {
        "obs": torch.rand(300, 4, generator=generator),  # 4,800 bytes: 5 chunks, the last short
        "actions": torch.randint(0, 2, (300,), generator=generator),  # int64, 2,400 bytes
        "terminated": torch.rand(1500, generator=generator) < 0.1,  # bool, 1,500 bytes
        "sum_nodes": torch.rand(256, dtype=torch.float64, generator=generator),  # 2,048: 2
        "small": torch.arange(4),  # inline
        "writes": 300,
    }
    return {"agent": {"online": {"w": torch.ones(400)}}, "resume": {"replay": replay}}


def test_split_cuts_each_large_tensor_into_named_chunks_and_join_puts_it_back() -> None:
    state = replay_state()
    references, chunks = split(state["resume"]["replay"])
    obs = references["obs"]
    assert set(obs) == {REFERENCE, "dtype", "shape"} and obs["shape"] == [300, 4]
    assert len(obs[REFERENCE]) == 5  # ceil(4,800 / 1,024)
    assert [len(chunks[d]) for d in obs[REFERENCE]] == [1024] * 4 + [4800 - 4096]
    for digest, data in chunks.items():
        assert hashlib.sha256(data).hexdigest() == digest
    assert torch.equal(references["small"], torch.arange(4)) and references["writes"] == 300
    joined = join(references, reader({d: bytes(c) for d, c in chunks.items()}))
    assert_same(state["resume"]["replay"], joined)


def test_a_checkpoint_keeps_its_weights_inline_and_its_replay_memory_in_chunks(
    tmp_path: Path,
) -> None:
    path = save_checkpoint(replay_state(), tmp_path / "run.pt")
    raw = torch.load(path, weights_only=True)
    assert torch.equal(raw["agent"]["online"]["w"], torch.ones(400))  # 1,600 bytes, not cut
    assert REFERENCE in raw["resume"]["replay"]["obs"]
    folder = chunk_folder(path)
    assert folder == tmp_path / "run.chunks"
    assert len(list(folder.iterdir())) == 5 + 3 + 2 + 2
    assert_same(replay_state(), load_checkpoint(path))
    verify_checkpoint(path)


def test_a_later_save_writes_only_the_chunks_that_changed_and_deletes_the_unused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.pt"
    state = replay_state()
    save_checkpoint(state, path)
    before = set(os.listdir(chunk_folder(path)))
    written: list[str] = []
    real = checkpoints._write_file
    monkeypatch.setattr(
        checkpoints, "_write_file", lambda data, to: (written.append(to.name), real(data, to))
    )
    state["resume"]["replay"]["obs"][10:20] += 1.0  # rows in the first chunk only
    save_checkpoint(state, path)
    assert written[-1] == "run.pt" and len(written) == 2  # one new chunk, then the file
    after = set(os.listdir(chunk_folder(path)))
    assert len(after) == len(before) and len(after - before) == 1 and after - before == {written[0]}
    assert_same(state, load_checkpoint(path))


def test_a_save_cut_off_before_its_file_leaves_the_previous_checkpoint_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.pt"
    first = replay_state(0)
    save_checkpoint(first, path)
    real = checkpoints._write_file

    def dies_at_the_file(data: bytes, to: Path) -> None:
        if to == path:
            raise OSError(28, "No space left on device")
        real(data, to)

    monkeypatch.setattr(checkpoints, "_write_file", dies_at_the_file)
    with pytest.raises(OSError, match="No space"):
        save_checkpoint(replay_state(1), path)  # every chunk new: all written, none referenced
    assert_same(first, load_checkpoint(path))
    monkeypatch.setattr(checkpoints, "_write_file", real)
    save_checkpoint(first, path)  # the next save deletes what the cut-off one left
    assert len(list(chunk_folder(path).iterdir())) == 12


def test_a_chunk_said_to_be_there_that_is_not_fails_the_save_before_it_writes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.pt"
    state = replay_state(0)
    save_checkpoint(state, path)
    data, chunks = checkpoint_parts(replay_state(1))
    known = dict.fromkeys(chunks)  # all "already there": none is
    with pytest.raises(CheckpointError, match=r"not saved: 12 chunk\(s\) .* are gone from"):
        write_checkpoint(data, path, known)
    assert_same(state, load_checkpoint(path))


def test_a_damaged_or_missing_chunk_is_refused(tmp_path: Path) -> None:
    path = save_checkpoint(replay_state(), tmp_path / "run.pt")
    victim = sorted(chunk_folder(path).iterdir())[3]
    data = bytearray(victim.read_bytes())
    data[7] ^= 0x10
    victim.write_bytes(bytes(data))
    for check in (verify_checkpoint, load_checkpoint):
        with pytest.raises(
            CheckpointError,
            match=rf"run.pt is damaged: its chunk {victim.name[:12]} is damaged \(digest",
        ):
            check(path)
    victim.unlink()
    verify_checkpoint(path)  # what is there is whole; what is missing is found at the load
    with pytest.raises(CheckpointError, match=rf"its chunk {victim.name[:12]} is missing from"):
        load_checkpoint(path)


@pytest.mark.parametrize(
    ("reference", "said"),
    [
        ({REFERENCE: ["not hex"], "dtype": torch.float32, "shape": [1]}, "not one rdqn writes"),
        ({REFERENCE: [], "dtype": "float32", "shape": [1]}, "not one rdqn writes"),
        ({REFERENCE: [], "dtype": torch.float32, "shape": [-1]}, "not one rdqn writes"),
        ({REFERENCE: [], "dtype": torch.float32, "shape": [3]}, "hold 0 bytes, not 12"),
    ],
)
def test_a_reference_rdqn_could_not_have_written_is_refused(
    reference: dict[str, Any], said: str
) -> None:
    data = checkpoints.checkpoint_bytes({"resume": {"replay": {"obs": reference}}})
    with pytest.raises(CheckpointError, match=said):
        load_checkpoint_bytes(data, chunks={})


def test_orphan_temporaries_in_a_chunk_folder_are_removed(tmp_path: Path) -> None:
    folder = tmp_path / "run.chunks"
    folder.mkdir()
    orphan = folder / f".{'a' * 64}.999999999.xyz.tmp"
    orphan.write_bytes(b"half a chunk")
    assert remove_orphan_temporaries(tmp_path) == [orphan]


def test_a_run_sends_each_chunk_once_and_its_deletion_takes_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Periodic saves of a run pass the chunks its last checkpoint wrote as None (a relay sends
    no bytes for them); its final checkpoint has none, and deleting the run takes the file."""
    monkeypatch.setattr(lifecycle, "next_checkpoint_gap", lambda period, cost: period)
    with RunStore(tmp_path / "rdqn.db") as store:
        sent: list[dict[str, Any]] = []
        real = store.save_checkpoint

        def spy(run_id: str, data: bytes, **kwargs: Any) -> Path:
            sent.append(kwargs["chunks"])
            return real(run_id, data, **kwargs)

        store.save_checkpoint = spy  # type: ignore[method-assign]
        run = RecordedRun(tiny(400), store, checkpoint_every=1e-9)
        run_id = run_to_end(run).id
        resumable = [chunks for chunks in sent if chunks]
        assert len(resumable) >= 2
        first, later = resumable[0], resumable[1:]
        assert all(chunk is not None for chunk in first.values())
        for before, chunks in zip(resumable, later, strict=False):
            for digest, chunk in chunks.items():
                assert (chunk is None) == (digest in before)
        assert any(chunk is None for chunk in later[-1].values())  # unchanged chunks stay
        checkpoint = store.get_run(run_id).checkpoint_path
        assert sent[-1] == {} and not chunk_folder(checkpoint).exists()  # the final save: none
        store.delete_run(run_id)
        assert not Path(checkpoint).exists()


def test_a_relayed_save_carries_only_the_new_chunks(tmp_path: Path) -> None:
    with RunStore(tmp_path / "rdqn.db") as store:
        run_id = store.create_run(config={}, env_id="CartPole-v1", scheme="rank", seed=0)
        messages: list[tuple[Any, ...]] = []
        relay = RecordRelay(messages.append)
        data, chunks = checkpoint_parts(replay_state(0))
        relay.save_checkpoint(run_id, data, chunks=chunks, resume_env_steps=5)
        state = replay_state(0)
        state["resume"]["replay"]["obs"][0] += 1.0
        data, changed = checkpoint_parts(state)
        relay.save_checkpoint(
            run_id, data, chunks={d: None if d in chunks else c for d, c in changed.items()}
        )
        assert [sum(c is not None for c in m[3]["chunks"].values()) for m in messages] == [12, 1]
        for message in messages:
            apply_record(store, *message[1:])
        assert_same(state, load_checkpoint(store.get_run(run_id).checkpoint_path))
