"""How the command line refuses bad arguments: `UsageError` (one line, exit status 2), the
argument parser that raises it instead of exiting, and the help on ``--set`` fields. Every
command's module imports these from here; `rdqn.cli.parser` assembles the commands."""

from __future__ import annotations

import argparse
from typing import NoReturn

from rdqn.config import field_docs

__all__ = ["Parser", "UsageError", "set_help"]


class UsageError(Exception):
    """A bad argument: reported as one line with exit status 2."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors raise `UsageError` (not argparse's exit)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def set_help() -> str:
    """The config fields ``--set KEY=VALUE`` takes, one line each with its doc."""
    docs = field_docs()
    lines = ["config fields for --set KEY=VALUE (VALUE is JSON; bare words are strings):"]
    lines += [f"  {key:28s} {doc}" for key, doc in docs.items() if key not in ("preset", "seed")]
    return "\n".join(lines)
