"""Checkpoint chunks: a large replay memory saved in pieces, only the pieces that changed written.

A run's resume checkpoint holds its whole replay memory, allocated at full capacity. Written as
one file, every periodic save cost a copy of all of it, however little had changed, and the
cap on saving's share of a run's time then pushed the next save minutes away on a busy machine
(a run killed there lost every step since). So a checkpoint's tensors larger than one chunk
(`CHUNK_BYTES`) are not kept in its archive: each is cut into chunks of `CHUNK_BYTES`, and the
archive keeps a reference in its place,

    {REFERENCE: [SHA-256 of each chunk, in order], "dtype": torch dtype, "shape": [sizes]},

while the chunks are files named by their SHA-256 in the folder beside the checkpoint
(`chunk_folder`: ``<run id>.chunks`` beside ``<run id>.pt``). A ring buffer writes its rows in
order, so between two saves only the chunks holding the rows written since change (and the
priorities and sample counts, which change wherever a batch was drawn); a save hashes every
chunk (about 2 GB/s) and writes only those the folder does not hold yet.

Saving (`write_chunks`, then the checkpoint file, then `keep_only`) writes each new chunk
atomically before the checkpoint that references it and deletes the chunks no checkpoint
references only after it, so a crash anywhere leaves the previous checkpoint whole. Loading
(`join`) checks each chunk against its name before its bytes become a tensor: a damaged or
missing chunk is refused like a damaged checkpoint.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import shutil
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

__all__ = [
    "CHUNK_BYTES",
    "REFERENCE",
    "ChunkError",
    "Chunks",
    "chunk_folder",
    "join",
    "keep_only",
    "read_chunks",
    "reader",
    "remove_folder",
    "split",
    "verify_folder",
    "write_chunks",
]

CHUNK_BYTES = 1 << 18
"""Bytes per chunk (the last chunk of a tensor may be shorter); smaller tensors stay inline."""
REFERENCE = "rdqn-chunks"
"""The key that marks a chunked tensor's reference in a checkpoint's state."""
_DIGEST = re.compile(r"[0-9a-f]{64}")

Chunks = Mapping[str, "bytes | memoryview | None"]
"""Every chunk a checkpoint references, by SHA-256 (hex): its bytes, or None for a chunk the
writer knows the folder holds already (it referenced it in the checkpoint saved before)."""


class ChunkError(ValueError):
    """A chunk is missing, damaged or not referenced as a chunk should be (the checkpoint module
    turns it into a `CheckpointError` naming the file)."""


def chunk_folder(checkpoint: str | os.PathLike[str]) -> Path:
    """The folder of a checkpoint file's chunks: ``<name without suffix>.chunks`` beside it."""
    return Path(checkpoint).with_suffix(".chunks")


def split(state: Any) -> tuple[Any, dict[str, memoryview]]:
    """``state`` with every tensor larger than `CHUNK_BYTES` replaced by its reference, and the
    chunks they reference (views of the tensors' memory: nothing is copied)."""
    import torch

    chunks: dict[str, memoryview] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.nbytes > CHUNK_BYTES:
            flat = value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()
            data = memoryview(flat)
            digests = []
            for start in range(0, len(data), CHUNK_BYTES):
                piece = data[start : start + CHUNK_BYTES]
                digest = hashlib.sha256(piece).hexdigest()
                chunks[digest] = piece
                digests.append(digest)
            return {REFERENCE: digests, "dtype": value.dtype, "shape": list(value.shape)}
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(walk(item) for item in value)
        return value

    return walk(state), chunks


def join(state: Any, read: Callable[[str], bytes]) -> Any:
    """``state`` with every reference (`split`) replaced by its tensor, each chunk read with
    ``read`` (which checks it: `read_chunk`, or a mapping's). `ChunkError` for a reference that
    is not one `split` writes, or chunks that do not add up to its tensor's size."""
    import torch

    def tensor(reference: Mapping[str, Any]) -> Any:
        digests, dtype, shape = (reference.get(k) for k in (REFERENCE, "dtype", "shape"))
        if not (
            isinstance(digests, list)
            and all(isinstance(d, str) and _DIGEST.fullmatch(d) for d in digests)
            and isinstance(dtype, torch.dtype)
            and isinstance(shape, list)
            and all(type(n) is int and n >= 0 for n in shape)
        ):
            raise ChunkError("a chunked tensor's reference is not one rdqn writes")
        data = b"".join(read(digest) for digest in digests)
        size = math.prod(shape) * dtype.itemsize
        if len(data) != size:
            raise ChunkError(
                f"the chunks of a {tuple(shape)} {dtype} tensor hold {len(data):,} bytes, not "
                f"{size:,}"
            )
        return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(shape)

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            if REFERENCE in value:
                return tensor(value)
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(walk(item) for item in value)
        return value

    return walk(state)


def checked(digest: str, data: bytes) -> bytes:
    """``data`` if it is the chunk named ``digest``; `ChunkError` otherwise."""
    if hashlib.sha256(data).hexdigest() != digest:
        raise ChunkError(f"its chunk {digest[:12]} is damaged (digest mismatch)")
    return data


def read_chunk(folder: Path, digest: str) -> bytes:
    """The chunk named ``digest`` in ``folder``, checked; `ChunkError` if missing or damaged."""
    try:
        data = (folder / digest).read_bytes()
    except FileNotFoundError:
        raise ChunkError(f"its chunk {digest[:12]} is missing from {folder}") from None
    except OSError as err:
        raise ChunkError(f"its chunk {digest[:12]} cannot be read: {err}") from None
    return checked(digest, data)


def reader(chunks: Path | Mapping[str, bytes]) -> Callable[[str], bytes]:
    """What `join` reads each chunk with: from a folder (`read_chunk`), or from the chunks a
    worker was sent (`read_chunks`), each checked against its name."""
    if isinstance(chunks, Path):
        return partial(read_chunk, chunks)

    def read(digest: str) -> bytes:
        if digest not in chunks:
            raise ChunkError(f"its chunk {digest[:12]} is missing")
        return checked(digest, chunks[digest])

    return read


def read_chunks(folder: Path) -> dict[str, bytes]:
    """Every chunk file in ``folder`` (none if there is no folder), unchecked: what a worker
    that cannot read the server's files is sent with the checkpoint's bytes (`join` checks
    each one it uses)."""
    if not folder.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in folder.iterdir() if _DIGEST.fullmatch(p.name)}


def verify_folder(folder: Path) -> None:
    """Check every chunk file in ``folder`` against its name (no torch needed); `ChunkError`
    for the first damaged one. Missing chunks are found when the checkpoint is loaded."""
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            if _DIGEST.fullmatch(path.name):
                read_chunk(folder, path.name)


def write_chunks(
    folder: Path, chunks: Chunks, write: Callable[[bytes | memoryview, Path], object]
) -> None:
    """Write the chunks of ``chunks`` that ``folder`` does not hold yet, each with ``write`` (an
    atomic write). `ChunkError`, before anything is written, for a chunk given as None (known
    to be there) that the folder does not hold: the checkpoint would reference nothing."""
    missing = [d for d, data in chunks.items() if data is None and not (folder / d).is_file()]
    if missing:
        raise ChunkError(
            f"{len(missing)} chunk(s) the previous checkpoint wrote are gone from {folder} "
            f"({missing[0][:12]}, ...)"
        )
    bad = [d for d in chunks if not _DIGEST.fullmatch(d)]
    if bad:
        raise ChunkError(f"{bad[0]!r} does not name a chunk (a SHA-256 in hex)")
    for digest, data in chunks.items():
        if data is not None and not (folder / digest).is_file():
            write(data, folder / digest)


def keep_only(folder: Path, chunks: Chunks) -> None:
    """Delete the chunk files of ``folder`` that ``chunks`` (the new checkpoint's) does not
    reference; a file that cannot be deleted is left (the next save tries again)."""
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if _DIGEST.fullmatch(path.name) and path.name not in chunks:
            with contextlib.suppress(OSError):
                path.unlink()
    if not chunks:
        with contextlib.suppress(OSError):
            folder.rmdir()  # empty now (unless a file of another kind is in it)


def remove_folder(checkpoint: str | os.PathLike[str]) -> None:
    """Delete a checkpoint's chunk folder (with its run), if there is one."""
    shutil.rmtree(chunk_folder(checkpoint), ignore_errors=True)
