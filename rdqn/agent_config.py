"""Learner hyperparameters (`AgentConfig`) and the torch device they resolve to.

Every field carries a one-line ``metadata["doc"]`` (CLI help, dashboard tooltips); invalid values
raise ``ValueError`` naming the field, the value and what is allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import torch

from rdqn.nets import NETWORK_KINDS

__all__ = [
    "DEVICES",
    "LOSSES",
    "OPTIMIZERS",
    "TARGET_UPDATES",
    "AgentConfig",
    "resolve_device",
]

LOSSES: tuple[str, ...] = ("huber", "mse")
OPTIMIZERS: tuple[str, ...] = ("adam", "sgd")
TARGET_UPDATES: tuple[str, ...] = ("soft", "hard")
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")


@dataclass(frozen=True, kw_only=True)
class AgentConfig:
    """Learner hyperparameters. Each field's ``metadata["doc"]`` is its one-line help text."""

    network: str = field(
        default="recurrent",
        metadata={
            "doc": "Q-network: two-LSTM recurrent net or the 64-64 MLP.",
            "choices": NETWORK_KINDS,
        },
    )
    optimizer: str = field(
        default="adam",
        metadata={
            "doc": "Adam (the notebooks) or plain SGD (tabular Q-learning step size).",
            "choices": OPTIMIZERS,
        },
    )
    lr: float = field(default=1e-3, metadata={"doc": "Learning rate (step size)."})
    gamma: float = field(default=0.99, metadata={"doc": "Discount factor in the TD target."})
    loss: str = field(
        default="huber",
        metadata={
            "doc": "Per-sample TD loss: Huber (smooth L1) or squared error.",
            "choices": LOSSES,
        },
    )
    double_dqn: bool = field(
        default=False,
        metadata={"doc": "Double DQN: online net picks the next action, target net scores it."},
    )
    target_update: str = field(
        default="soft",
        metadata={
            "doc": "Target net update: soft (Polyak, every update) or hard copy every K updates.",
            "choices": TARGET_UPDATES,
        },
    )
    tau: float = field(
        default=0.005, metadata={"doc": "Soft-update rate: theta' <- tau*theta + (1-tau)*theta'."}
    )
    target_sync_every: int = field(
        default=1000,
        metadata={"doc": "Hard update: copy online weights to target every K updates."},
    )
    grad_clip_norm: float | None = field(
        default=10.0,
        metadata={"doc": "Clip the global gradient L2 norm to this value (None: off)."},
    )
    dueling: bool = field(
        default=False, metadata={"doc": "Dueling head: Q = V + A - mean(A) (off in the sources)."}
    )
    fused_mlp: bool = field(
        default=True,
        metadata={
            "doc": "Run the MLP's update as one compiled call (same math as autograd, CPU only)."
        },
    )
    device: str = field(
        default="auto",
        metadata={
            "doc": "Torch device: auto picks CUDA when available, else CPU.",
            "choices": DEVICES,
        },
    )

    def __post_init__(self) -> None:
        for name in ("network", "optimizer", "loss", "target_update", "device"):
            value = getattr(self, name)
            choices = type(self).__dataclass_fields__[name].metadata["choices"]
            if value not in choices:
                raise ValueError(f"{name} must be one of {choices}, got {value!r}")
        for name in ("double_dqn", "dueling", "fused_mlp"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if not (_is_real(self.lr) and self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a finite number > 0, got {self.lr!r}")
        if not (_is_real(self.gamma) and 0.0 <= self.gamma <= 1.0):
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma!r}")
        if not (_is_real(self.tau) and 0.0 < self.tau <= 1.0):
            raise ValueError(f"tau must be in (0, 1], got {self.tau!r}")
        k = self.target_sync_every
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"target_sync_every must be an integer >= 1, got {k!r}")
        clip = self.grad_clip_norm
        if clip is not None and not (_is_real(clip) and clip > 0 and math.isfinite(clip)):
            raise ValueError(f"grad_clip_norm must be None or a finite number > 0, got {clip!r}")

    @classmethod
    def field_docs(cls) -> dict[str, str]:
        """``{field name: one-line doc}`` for CLI help and dashboard tooltips."""
        return {f.name: f.metadata["doc"] for f in fields(cls)}


def _is_real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def resolve_device(name: str) -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; ``"cuda"`` without CUDA is a ``ValueError``."""
    if name not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {name!r}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device must be available, got 'cuda' but CUDA is not available")
    return torch.device(name)
