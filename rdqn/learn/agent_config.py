"""Learner hyperparameters (`AgentConfig`) and the torch device they resolve to.

Importing this module does not import torch (the dashboard's server validates configs without
it; only `resolve_device` needs torch, and imports it when called).

Every field is a `rdqn.validation.setting`: a one-line doc (CLI help, dashboard tooltips), a rule
and a label; invalid values raise ``ValueError`` naming the field, the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rdqn.validation import Choice, Flag, Integer, Real, check_choice, check_fields, setting

if TYPE_CHECKING:
    import torch

__all__ = [
    "DEVICES",
    "LOSSES",
    "NETWORK_KINDS",
    "OPTIMIZERS",
    "TARGET_UPDATES",
    "AgentConfig",
    "resolve_device",
]

NETWORK_KINDS: tuple[str, ...] = ("recurrent", "mlp", "conv", "linear")
"""Values accepted by ``AgentConfig.network`` (and `rdqn.learn.nets.build_q_network`)."""
LOSSES: tuple[str, ...] = ("huber", "mse")
OPTIMIZERS: tuple[str, ...] = ("adam", "sgd")
TARGET_UPDATES: tuple[str, ...] = ("soft", "hard")
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")


@dataclass(frozen=True, kw_only=True)
class AgentConfig:
    """Learner hyperparameters; each field states its doc, rule and label (`rdqn.validation`)."""

    network: str = setting(
        "recurrent",
        "Q-network: two-LSTM recurrent net, the 64-64 MLP, MinAtar's conv net or a linear table.",
        Choice(NETWORK_KINDS),
        label="Q-network",
    )
    optimizer: str = setting(
        "adam",
        "Adam (the notebooks) or plain SGD (tabular Q-learning step size).",
        Choice(OPTIMIZERS),
        label="Optimizer",
    )
    lr: float = setting(
        1e-3,
        "Learning rate (step size), at most 1: a tabular step past the target overshoots it, "
        "and Adam's steps are that size in every weight.",
        Real(minimum=0.0, open_minimum=True, maximum=1.0),
        label="Learning rate",
        step=1e-4,
    )
    gamma: float = setting(
        0.99,
        "Discount factor in the TD target.",
        Real(minimum=0.0, maximum=1.0),
        label="γ (discount)",
        step=0.01,
    )
    loss: str = setting(
        "huber",
        "Per-sample TD loss: Huber (smooth L1) or squared error.",
        Choice(LOSSES),
        label="Loss",
    )
    double_dqn: bool = setting(
        False,
        "Double DQN: online net picks the next action, target net scores it.",
        Flag(),
        label="Double DQN",
    )
    target_update: str = setting(
        "soft",
        "Target net update: soft (Polyak, every update) or hard copy every K updates.",
        Choice(TARGET_UPDATES),
        label="Target network",
    )
    tau: float = setting(
        0.005,
        "Soft-update rate: theta' <- tau*theta + (1-tau)*theta'.",
        Real(minimum=0.0, maximum=1.0, open_minimum=True),
        label="τ (soft update)",
    )
    target_sync_every: int = setting(
        1000,
        "Hard update: copy online weights to target every K updates.",
        Integer(minimum=1),
        label="Target sync period",
    )
    grad_clip_norm: float | None = setting(
        10.0,
        "Clip the global gradient L2 norm to this value (None: off).",
        Real(minimum=0.0, open_minimum=True, optional=True),
        label="Gradient clip",
    )
    dueling: bool = setting(
        False,
        "Dueling head: Q = V + A - mean(A) (off in the sources).",
        Flag(),
        label="Dueling head",
    )
    fused_mlp: bool = setting(
        True,
        "Run the MLP's update as one compiled call (same math as autograd, CPU only).",
        Flag(),
        label="Fused MLP update",
    )
    device: str = setting(
        "auto",
        "Torch device: auto picks CUDA when available, else CPU.",
        Choice(DEVICES),
        label="Device",
    )

    def __post_init__(self) -> None:
        check_fields(self)


def resolve_device(name: str) -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; ``"cuda"`` without CUDA is a ``ValueError``."""
    import torch

    check_choice("device", name, DEVICES)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device must be available, got 'cuda' but CUDA is not available")
    return torch.device(name)
