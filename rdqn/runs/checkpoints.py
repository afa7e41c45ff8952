"""Checkpoint files: atomic writes and safe, well-explained loads.

A checkpoint is one ``torch.save`` zip archive holding a dict: the caller's state plus the marker
``{"format": "rdqn-checkpoint", "version": 2}``, then a line with the archive's digest. Three
properties matter:

* **Atomic save.** The bytes go to a temporary file in the target's directory, are flushed and
  fsynced, and only then ``os.replace`` moves them over the old checkpoint (a rename within one
  directory is atomic on POSIX and Windows). A crash mid-write leaves the previous checkpoint
  intact; the directory is fsynced too so the rename itself survives a power cut. A process
  killed mid-write leaves its temporary file (``.<name>.<pid>.<random>.tmp``, as large as the
  checkpoint) behind: `remove_orphan_temporaries` deletes those whose writer is gone.
* **Safe load.** ``torch.load(weights_only=True)`` unpickles only tensors and plain containers, so
  opening a checkpoint from elsewhere cannot run code. Every failure becomes a
  :class:`CheckpointError` that names the file and says which of missing / corrupt / damaged /
  foreign / unsupported version it is. :func:`save_checkpoint` refuses state that
  ``weights_only`` could not load back (numpy arrays, arbitrary objects), so a save never
  produces an unloadable file.
* **Digest.** The archive is followed by one line, ``\nrdqn-sha256:<64 hex digits>\n``, the
  SHA-256 of the archive's bytes, checked before anything is unpickled: damaged bytes are refused
  as "damaged (digest mismatch)" instead of reaching torch's unpickler or, worse, the replay
  kernels (where 10 flipped bits in a checkpoint let a resumed run train on silently, or crash
  with a segmentation fault). The digest travels inside the file, so it holds wherever the
  bytes go (a copied store, a worker sent the bytes) and cannot disagree with a record written
  a moment apart. ``torch.load`` reads past a trailing line, so the file is still a plain torch
  archive. A file without a valid digest line is refused too ("has no valid digest: damaged, or
  written by an older rdqn"): a line damaged so that it no longer parses looks exactly like the
  missing line of a file saved before digests existed, and loading such files unchecked let one
  flipped bit in the line and one in the replay memory resume silently.

* **Chunks.** The replay memory's tensors larger than a chunk (`CHUNKED`) live in chunk files
  beside the checkpoint, each written once and named by its SHA-256 (`rdqn.runs.checkpoint_chunks`):
  a periodic save writes only what changed since the last one. The archive references them, and
  its digest covers the references, so the whole checkpoint is checked.

Versions: 1 held a run's agent (weights, optimizer), config and counters; 2 may add a ``"resume"``
entry with everything else a stopped run needs to continue (`rdqn.runs.resume`); 3 may reference
chunks. All load when they carry a digest, and the agent's weights sit where they always did
(``state["agent"]["online"]``).

Importing this module does not import torch (the dashboard's server cleans up checkpoint files
without it); writing or reading a checkpoint does.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import tempfile
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rdqn.runs.checkpoint_chunks import (
    ChunkError,
    Chunks,
    chunk_folder,
    join,
    keep_only,
    reader,
    split,
    verify_folder,
    write_chunks,
)
from rdqn.runs.processes import process_alive

__all__ = [
    "CHECKPOINT_FORMAT",
    "CHUNKED",
    "CHECKPOINT_VERSION",
    "READABLE_VERSIONS",
    "CheckpointError",
    "checkpoint_bytes",
    "checkpoint_digest",
    "checkpoint_parts",
    "load_checkpoint",
    "load_checkpoint_bytes",
    "remove_orphan_temporaries",
    "save_checkpoint",
    "verify_checkpoint",
    "write_checkpoint",
]

CHECKPOINT_FORMAT = "rdqn-checkpoint"
CHECKPOINT_VERSION = 3
READABLE_VERSIONS: tuple[int, ...] = (1, 2, 3)
_MARKER_KEYS = ("format", "version")
_ZIP_MAGIC = b"PK\x03\x04"
_DIGEST_PREFIX = b"\nrdqn-sha256:"
_DIGEST_LINE = len(_DIGEST_PREFIX) + 64 + 1
_HEX_DIGITS = frozenset(b"0123456789abcdef")
_TMP_SUFFIX = ".tmp"
STALE_TEMPORARY_S = 600.0
"""Age past which a temporary checkpoint file is an orphan whoever wrote it (a save takes
seconds at most)."""

# Exact types (not subclasses: np.float64 subclasses float but does not load with weights_only).
_LEAF_TYPES: frozenset[type] = frozenset({type(None), bool, int, float, complex, str, bytes})
_CONTAINER_TYPES: tuple[type, ...] = (dict, list, tuple, set)


class CheckpointError(ValueError):
    """A checkpoint file is missing, corrupt, foreign, or of an unsupported version."""


def _check_loadable(value: Any, where: str) -> None:
    """Raise ``TypeError`` naming the first value ``torch.load(weights_only=True)`` would refuse."""
    import torch

    kind = type(value)
    if (
        kind in _LEAF_TYPES
        or kind in (torch.dtype, torch.device)
        or isinstance(value, torch.Tensor)
    ):
        return
    if kind in (dict, OrderedDict):
        for key, item in value.items():
            _check_loadable(key, f"{where} key {key!r}")
            _check_loadable(item, f"{where}[{key!r}]")
        return
    if kind in _CONTAINER_TYPES or kind is torch.Size:
        for i, item in enumerate(value):
            _check_loadable(item, f"{where}[{i}]")
        return
    raise TypeError(
        f"checkpoint state at {where} has type {kind.__module__}.{kind.__qualname__}, which "
        "torch.load(weights_only=True) cannot read back; store tensors (torch.from_numpy), "
        "Python scalars, strings and dict/list/tuple containers only"
    )


def checkpoint_bytes(state: Mapping[str, Any]) -> bytes:
    """``state`` plus the rdqn marker as the bytes of a checkpoint file.

    ``state`` may not use the marker keys ``"format"`` and ``"version"`` (``ValueError``) and must
    hold only what ``weights_only`` loading accepts (``TypeError`` naming the offending entry).
    A worker that cannot write the server's files sends these bytes instead.
    """
    clash = [key for key in _MARKER_KEYS if key in state]
    if clash:
        raise ValueError(f"state must not use the reserved checkpoint keys {clash}")
    payload = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, **state}
    _check_loadable(payload, "state")
    import torch

    buffer = io.BytesIO()
    torch.save(payload, buffer)
    archive = buffer.getvalue()
    return archive + _DIGEST_PREFIX + checkpoint_digest(archive).encode("ascii") + b"\n"


CHUNKED = ("resume", "replay")
"""Where in a checkpoint's state the tensors larger than a chunk go to chunk files: the replay
memory of a resume state (the weights stay where a plain ``torch.load`` finds them)."""


def checkpoint_parts(state: Mapping[str, Any]) -> tuple[bytes, dict[str, memoryview]]:
    """``state`` as the bytes of a checkpoint file whose tensors under `CHUNKED` larger than a
    chunk are references, and the chunks they reference (`rdqn.runs.checkpoint_chunks.split`):
    what `write_checkpoint` writes."""
    outer, inner = CHUNKED
    part = state.get(outer)
    if not (isinstance(part, Mapping) and inner in part):
        return checkpoint_bytes(state), {}
    references, chunks = split(part[inner])
    return checkpoint_bytes({**state, outer: {**part, inner: references}}), chunks


def checkpoint_digest(archive: bytes) -> str:
    """The SHA-256 (hex) a checkpoint file carries of its archive's bytes."""
    return hashlib.sha256(archive).hexdigest()


def _verified_archive(data: bytes, source: str) -> bytes | None:
    """The archive of a checkpoint's bytes, its digest checked (`CheckpointError` when it does
    not match); None for bytes without a valid digest line, which `load_checkpoint_bytes`
    refuses: a line damaged so that it no longer parses cannot be told from the missing line of
    an older rdqn, and loading either unchecked would let damage through."""
    line = data[-_DIGEST_LINE:]
    stored = line[len(_DIGEST_PREFIX) : -1]
    if not (
        len(data) > _DIGEST_LINE
        and line.startswith(_DIGEST_PREFIX)
        and line[-1:] == b"\n"
        and len(stored) == 64
        and all(byte in _HEX_DIGITS for byte in stored)
    ):
        return None
    archive = data[:-_DIGEST_LINE]
    if stored != checkpoint_digest(archive).encode("ascii"):
        raise CheckpointError(f"checkpoint {source} is damaged (digest mismatch)")
    return archive


def write_checkpoint(
    data: bytes, path: str | os.PathLike[str], chunks: Chunks | None = None
) -> Path:
    """Write checkpoint bytes (`checkpoint_bytes`, or the first of `checkpoint_parts`) to
    ``path`` atomically, with ``chunks``, every chunk they reference (`Chunks`), into its chunk
    folder first and the chunks no longer referenced deleted after; return the path.

    Parent directories are created. On any failure the previous checkpoint at ``path``, if any,
    is whole and no temporary file is left behind; a chunk given as already there that is not
    (`CheckpointError`) fails the save before anything is written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    folder = chunk_folder(target)
    if chunks:
        folder.mkdir(exist_ok=True)
        try:
            write_chunks(folder, chunks, _write_file)
        except ChunkError as err:
            raise CheckpointError(f"checkpoint {target} not saved: {err}") from None
        _fsync_directory(folder)
    _write_file(data, target)
    _fsync_directory(target.parent)
    if chunks is not None:
        keep_only(folder, chunks)
    return target


def _write_file(data: bytes | memoryview, target: Path) -> None:
    """Write ``data`` to ``target`` atomically: a temporary file beside it, flushed, fsynced,
    then renamed over it (the directory is fsynced by the caller)."""
    fd, tmp_name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.{os.getpid()}.", suffix=_TMP_SUFFIX
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def _writer_pid(name: str) -> int | None:
    """The pid in a temporary file's name ``.<target>.<pid>.<random>.tmp`` (None: none there,
    as in the names of older rdqn versions)."""
    parts = name[: -len(_TMP_SUFFIX)].rsplit(".", 2)
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def remove_orphan_temporaries(
    directory: str | os.PathLike[str], *, stale_after: float = STALE_TEMPORARY_S
) -> list[Path]:
    """Delete the temporary files `write_checkpoint` left in ``directory`` (and its chunk
    folders) when its process died mid-write: those whose writer (the pid in the name) is gone,
    and any older than ``stale_after`` seconds. Files being written by a live process,
    checkpoints and other files are left alone. Returns the files deleted; files that cannot be
    deleted are skipped.
    """
    removed = []
    now = time.time()
    folder = Path(directory)
    temporaries = [*folder.glob(f".*{_TMP_SUFFIX}"), *folder.glob(f"*.chunks/.*{_TMP_SUFFIX}")]
    for path in temporaries:
        pid = _writer_pid(path.name)
        try:
            stale = now - path.stat().st_mtime > stale_after
            if stale or (pid is not None and not process_alive(pid, None)):
                path.unlink()
                removed.append(path)
        except OSError:
            continue  # gone already (its writer finished), or not ours to delete
    return removed


def save_checkpoint(state: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``state`` plus the rdqn marker to ``path`` atomically; return the path
    (`checkpoint_parts`, then `write_checkpoint`)."""
    data, chunks = checkpoint_parts(state)
    return write_checkpoint(data, path, chunks)


def _fsync_directory(directory: Path) -> None:
    """Persist a rename (POSIX); directories cannot be opened for fsync on Windows."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read(path: str | os.PathLike[str]) -> bytes:
    source = Path(path)
    try:
        with source.open("rb") as handle:
            return handle.read()
    except FileNotFoundError as exc:
        raise CheckpointError(f"checkpoint file not found: {source}") from exc
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {source}: {exc}") from exc


def load_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint`; return the state without the marker.

    Tensors are mapped to the CPU. Raises :class:`CheckpointError` (a ``ValueError``) whose message
    names ``path`` for a missing or unreadable file, a file without a valid digest line or whose
    digest does not match its bytes, a corrupt or truncated archive, a file that is not an rdqn
    checkpoint (plain pickle, text, a torch file without the marker or holding arbitrary
    objects), and a checkpoint version this code does not read.
    """
    return load_checkpoint_bytes(_read(path), source=str(Path(path)), chunks=chunk_folder(path))


def verify_checkpoint(path: str | os.PathLike[str]) -> None:
    """Check what can be checked of a checkpoint file without unpickling it (and without torch):
    it can be read, it is an archive, its digest line parses and matches its bytes, and each of
    its chunk files matches its name. Raises :class:`CheckpointError` as `load_checkpoint`
    would (a missing chunk is found there)."""
    _archive(_read(path), str(Path(path)))
    try:
        verify_folder(chunk_folder(path))
    except ChunkError as err:
        raise CheckpointError(f"checkpoint {Path(path)} is damaged: {err}") from None


def _archive(data: bytes, source: str) -> bytes:
    """The archive of a checkpoint's bytes, checked as `verify_checkpoint` says."""
    archive = _verified_archive(data, source)
    head = data[: len(_ZIP_MAGIC)]
    if len(head) < len(_ZIP_MAGIC):
        raise CheckpointError(f"checkpoint {source} is corrupt or truncated ({len(head)} bytes)")
    if head != _ZIP_MAGIC:
        raise CheckpointError(f"{source} is not an rdqn checkpoint: it is not a torch.save archive")
    if archive is None:
        raise CheckpointError(
            f"checkpoint {source} has no valid digest: damaged, or written by an older rdqn"
        )
    return archive


def load_checkpoint_bytes(
    data: bytes,
    *,
    source: str = "checkpoint bytes",
    chunks: Path | Mapping[str, bytes] | None = None,
) -> dict[str, Any]:
    """:func:`load_checkpoint` for the bytes of a checkpoint file (`checkpoint_bytes`, or a file
    read elsewhere) with its ``chunks``: their folder, or the chunks themselves
    (`rdqn.runs.checkpoint_chunks.read_chunks`); ``source`` names them in errors."""
    data = _archive(data, source)
    import torch

    try:
        loaded = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception as exc:
        # The weights-only unpickler names a class it refuses as an "Unsupported global"; any
        # other unpickling failure means damaged bytes.
        if "unsupported global" in str(exc).lower():
            raise CheckpointError(
                f"{source} is not an rdqn checkpoint: it holds objects other than tensors and "
                "plain containers, which are not loaded for safety"
            ) from exc
        raise CheckpointError(f"checkpoint {source} is corrupt or truncated: {exc}") from exc
    if not isinstance(loaded, dict) or loaded.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"{source} is not an rdqn checkpoint: a torch file without the "
            f"{CHECKPOINT_FORMAT!r} marker"
        )
    version = loaded.get("version")
    if version not in READABLE_VERSIONS:
        raise CheckpointError(
            f"checkpoint {source} has version {version!r}; this rdqn reads versions "
            f"{READABLE_VERSIONS[0]} to {READABLE_VERSIONS[-1]}"
        )
    state = {key: value for key, value in loaded.items() if key not in _MARKER_KEYS}
    try:
        return join(state, reader({} if chunks is None else chunks))
    except ChunkError as err:
        raise CheckpointError(f"checkpoint {source} is damaged: {err}") from None
