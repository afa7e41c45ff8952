"""Trainer state as checkpoint data: numpy arrays as tensors, generators as their state dicts.

``torch.load(weights_only=True)`` reads tensors, Python scalars, strings and containers only
(`rdqn.runs.checkpoints`), so :func:`to_checkpoint` turns the numpy arrays of the replay memory and
the telemetry into tensors and :func:`from_checkpoint` turns them back, dtype for dtype. A numpy
``Generator``'s state (``bit_generator.state``) is plain already: the bit generator's name and
Python ints (PCG64's 128-bit words included, which the weights-only unpickler reads).

`RESUME_KEY` names the entry of a checkpoint that holds all of this; reading the name does not
import torch (the server checks a checkpoint's shape without it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["RESUME_KEY", "ResumeStateError", "env_rng", "from_checkpoint", "to_checkpoint"]

RESUME_KEY = "resume"
"""The entry of `Trainer.checkpoint_state(resumable=True)` that `Trainer.restore` reads."""


class ResumeStateError(ValueError):
    """A checkpoint's state that `Trainer.restore` refuses, well-formed or not: one a trainer of
    this config could not have saved (damaged, or edited). The message names the part and what
    is wrong with it; nothing was changed."""


def to_checkpoint(value: Any) -> Any:
    """``value`` with every numpy array a tensor (a copy) and every numpy scalar a Python one;
    dicts, lists and tuples are rebuilt, anything else is returned as it is."""
    import torch

    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value, copy=True, order="C"))
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {key: to_checkpoint(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to_checkpoint(item) for item in value)
    return value


def from_checkpoint(value: Any) -> Any:
    """The inverse of :func:`to_checkpoint`: every tensor back to a numpy array."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, dict):
        return {key: from_checkpoint(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(from_checkpoint(item) for item in value)
    return value


def env_rng(env: Any) -> np.random.Generator:
    """The generator behind an env's resets (gymnasium's ``np_random`` of the unwrapped env;
    wrappers such as the time limit hold none)."""
    rng = env.unwrapped.np_random
    assert isinstance(rng, np.random.Generator)
    return rng
