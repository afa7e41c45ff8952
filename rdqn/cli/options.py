"""Options turned into what the commands use, checked before any work: the run config from the
run options (``--preset``, ``--env``, ``--steps``, ``--scheme``, ``--set``) and output files
(``--out``, ``--report``) checked for writing, then written whole or not at all
(`write_output`). Each refusal is a `UsageError`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rdqn.cli.usage import UsageError
from rdqn.config import RunConfig
from rdqn.envs import make_env
from rdqn.limits import check_limits
from rdqn.presets import configure
from rdqn.validation import shown


def parse_set(items: Sequence[str]) -> dict[str, Any]:
    """``--set KEY=VALUE`` items as config overrides: VALUE is JSON, or a bare-word string."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set expects KEY=VALUE, got {shown(item)}")
        if key == "preset":
            raise UsageError(f"--set preset={shown(raw)}: choose the preset with --preset NAME")
        try:
            overrides[key] = json.loads(raw)
        except ValueError:  # not JSON (a bare word), or a number of more than 4,300 digits
            overrides[key] = raw
    return overrides


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """The run config of a command that trains, within the server's limits, its env built once."""
    overrides: dict[str, Any] = {}
    if args.env is not None:
        overrides["env.id"] = args.env
    if args.steps is not None:
        overrides["train.total_steps"] = args.steps
    if getattr(args, "scheme", None) is not None:
        overrides["replay.scheme"] = args.scheme
    overrides.update(parse_set(args.set or []))
    config = configure(args.preset, overrides)
    # Before any run is filed or anything allocated: the server's limits, then the env itself
    # (its options, a prices CSV), which is cheap to build once sizes are within the limits.
    check_limits(config)
    make_env(config.env.id, **config.env.kwargs).close()
    return config


def check_writable(path: Path, option: str) -> None:
    """Refuse an output file that cannot be written, before any work: its folder is created
    (as the writer would) and the file opened for appending, then removed if it was new."""
    if path.is_dir():
        raise UsageError(f"{option} {path} is a directory; name a file to write")
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as err:
        raise UsageError(f"{option} {path} cannot be written: {err.strerror or err}") from None
    if not existed:
        path.unlink(missing_ok=True)


def write_output(path: Path, text: str, option: str, *, note: str = "") -> None:
    """Write an output file whole or not at all: into a temporary file beside it, renamed over
    it once written, so a disk that fills midway leaves the file as it was (or absent) and no
    temporary, never a truncated file. A device or pipe (``--out /dev/stdout``) is written
    directly. A failure is a `UsageError` naming the option, the file and ``note``."""
    try:
        target = path.resolve()
        if target.exists() and not stat.S_ISREG(target.stat().st_mode):
            target.write_text(text, encoding="utf-8")
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~_umask()
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                os.fchmod(handle.fileno(), mode)  # as a plain write would make it
                handle.write(text)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    except OSError as err:
        why = err.strerror or err
        raise UsageError(f"{option} {path} cannot be written: {why}{note}") from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
