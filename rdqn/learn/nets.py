"""Q-networks: the recurrent network of the high-frequency notebooks and the PER notebook's MLP.

Both map a batch of observation windows ``(B, T, d)`` to one action value per action ``(B, A)``.
They estimate Q(W, a), not action probabilities, so there is no softmax anywhere.

Recurrent Q-network (the high-frequency notebooks E14 and E15, layer for layer)::

    W (B, T, d) -> LSTM d->128 -> LSTM 128->128 -> [:, -1, :] -> Linear 128->64 -> ReLU
                -> Linear 64->A -> Q (B, A)

The two LSTMs are *separate* single-layer ``nn.LSTM(batch_first=True)`` modules (not one module with
``num_layers=2``), and every call starts both from a zero hidden state: no state is carried across
windows or samples, so a window's Q-values depend on that window alone. (R2D2's sequence replay
carries the state instead: `RecurrentQNet.unroll` reads a sequence step by step from a given
state, and returns the state after it.) With PyTorch's two bias vectors per LSTM the parameter
count is::

    512 (d + 130)  +  512 * 258  +  8256  +  65 A
    (LSTM d->128)    (LSTM 128->128) (Linear 128->64) (Linear 64->A)

MLP Q-network (the PER notebook's "Q-Network (Small MLP)"): Linear d->64, ReLU, 64->64, ReLU,
64->A. It reads only the last step of a window, so replay batches with window length T = 1, shape
``(B, 1, d)``, and plain ``(B, d)`` batches both work.

Convolutional Q-network (MinAtar's, Young & Tian 2019): a 10x10 frame of n channels, flattened
channel-last into d = 100 n values, -> Conv2d n->16, 3x3, stride 1, no padding -> ReLU -> flatten
(16 x 8 x 8 = 1,024) -> Linear 1024->128 -> ReLU -> Linear 128->A. It reads the last step of a
window. Parameters: 144 n + 16 + 131,200 + 129 A.

Optional dueling head (Wang et al. 2016, arXiv:1511.06581), off by default: the last linear layer
becomes an advantage stream ``A(h, a)`` plus a value stream ``V(h)`` (one extra ``Linear(64, 1)``,
65 parameters), combined as ``Q = V + A - mean_a A``.

Initialisation: modules are built on the ``meta`` device (no global RNG is consumed), materialised
on the CPU and initialised by :meth:`reset_parameters` with the *same distributions as PyTorch's
defaults* drawn from an explicit ``torch.Generator``: the same generator seed gives identical
weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from rdqn.learn.agent_config import NETWORK_KINDS
from rdqn.validation import check_integer

__all__ = [
    "NETWORK_KINDS",
    "ConvQNet",
    "LinearQNet",
    "MLPQNet",
    "QHead",
    "RecurrentQNet",
    "STATE_SIZE",
    "build_q_network",
    "count_parameters",
    "init_default_",
    "parameter_bytes",
]

LSTM_HIDDEN = 128
STATE_SIZE = 4 * LSTM_HIDDEN
"""Values in the recurrent network's state, flat: (h1, c1, h2, c2), each of ``LSTM_HIDDEN``."""
HEAD_HIDDEN = 64
FRAME = 10
"""Side of the square frames `ConvQNet` reads (MinAtar's)."""
CONV_CHANNELS = 16
CONV_HIDDEN = 128


def init_default_(module: nn.Module, generator: torch.Generator | None = None) -> None:
    """Re-initialise every ``nn.Linear`` / ``nn.Conv2d`` / ``nn.LSTM`` in ``module`` with
    PyTorch's default scheme.

    Linear and Conv2d: weight ``kaiming_uniform_(a=sqrt(5))``, i.e. U(-1/sqrt(fan_in),
    1/sqrt(fan_in)) (a convolution's fan_in: input channels x kernel area), and bias
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)). LSTM: every weight and bias U(-1/sqrt(H), 1/sqrt(H)).
    Draws come from ``generator`` (the global default generator when ``None``), in module order.
    """
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, nn.Linear | nn.Conv2d):
                nn.init.kaiming_uniform_(sub.weight, a=math.sqrt(5), generator=generator)
                if sub.bias is not None:
                    bound = 1.0 / math.sqrt(sub.weight[0].numel())  # fan_in
                    nn.init.uniform_(sub.bias, -bound, bound, generator=generator)
            elif isinstance(sub, nn.LSTM):
                bound = 1.0 / math.sqrt(sub.hidden_size)
                for weight in sub.parameters():
                    nn.init.uniform_(weight, -bound, bound, generator=generator)


class QHead(nn.Module):
    """Linear ``in->hidden`` -> ReLU -> Linear ``hidden->A`` (``self.out``), optionally dueling.

    With ``dueling=True`` a value stream ``self.value = Linear(hidden, 1)`` is added and
    ``Q(h, a) = V(h) + A(h, a) - (1/|A|) sum_a' A(h, a')`` where ``A = self.out(relu(fc(h)))``.
    """

    def __init__(
        self, in_features: int, hidden: int, n_actions: int, *, dueling: bool = False
    ) -> None:
        super().__init__()
        self.fc = nn.Linear(in_features, hidden)
        self.out = nn.Linear(hidden, n_actions)
        self.value: nn.Linear | None = nn.Linear(hidden, 1) if dueling else None

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.fc(features))
        q = self.out(hidden)
        if self.value is not None:
            q = self.value(hidden) + q - q.mean(dim=-1, keepdim=True)
        return q


class RecurrentQNet(nn.Module):
    """Two separate single-layer LSTMs (d->128, 128->128), last step, MLP head; (B,T,d) -> (B,A).

    See the module docstring for the architecture and the parameter-count formula
    ``512(d+130) + 512*258 + 8256 + 65A``. Each forward pass starts from a zero hidden state.
    """

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        *,
        dueling: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        check_integer("obs_dim", obs_dim, minimum=1)
        check_integer("n_actions", n_actions, minimum=1)
        super().__init__()
        self.obs_dim = obs_dim
        self.n_actions = n_actions
        with torch.device("meta"):
            self.lstm1 = nn.LSTM(obs_dim, LSTM_HIDDEN, num_layers=1, batch_first=True)
            self.lstm2 = nn.LSTM(LSTM_HIDDEN, LSTM_HIDDEN, num_layers=1, batch_first=True)
            self.head = QHead(LSTM_HIDDEN, HEAD_HIDDEN, n_actions, dueling=dueling)
        self.to_empty(device="cpu")
        self.reset_parameters(generator)

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Initialise all weights with PyTorch's default distributions drawn from ``generator``."""
        init_default_(self, generator)

    def forward(self, windows: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Q-values ``(B, A)`` for windows ``(B, T, d)``; hidden states start at zero every call.

        ``mask`` ``(B, T)`` marks each window's real frames: a suffix (a window is zero-padded on
        the left early in an episode, or where replay no longer holds a predecessor). The LSTMs
        then run over the real frames only, from a zero state at the first one, so a window's
        Q-values do not depend on what its padding holds; without a mask every frame counts.
        Windows that all hold as many real frames (one acting window) are cut to them; others
        are packed."""
        if windows.dim() != 3:
            raise ValueError(
                f"RecurrentQNet expects windows of shape (B, T, d), got {tuple(windows.shape)}"
            )
        if mask is not None and not bool(mask.all()):
            lengths = mask.sum(dim=1)
            if bool((lengths == lengths[0]).all()) and self._is_suffix(mask, lengths):
                windows = windows[:, windows.shape[1] - int(lengths[0]) :]  # one window acting
            else:
                return self.head(self._last_real_state(windows, mask, lengths))
        sequence, _ = self.lstm1(windows)
        sequence, _ = self.lstm2(sequence)
        return self.head(sequence[:, -1, :])

    def unroll(
        self, steps: torch.Tensor, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Q-values ``(B, L, A)`` at every step of sequences ``(B, L, d)`` and the state after
        the last, both LSTMs carrying their state from step to step from ``state`` ``(B,
        STATE_SIZE)`` (flat (h1, c1, h2, c2); zeros when None). A sequence shorter than L,
        padded on the right, gets the same Q-values at its steps whatever the padding holds
        (the LSTMs read forward only); the state returned has then read the padding too."""
        if steps.dim() != 3:
            raise ValueError(
                f"RecurrentQNet.unroll expects steps of shape (B, L, d), got {tuple(steps.shape)}"
            )
        batch = steps.shape[0]
        if state is None:
            state = steps.new_zeros(batch, STATE_SIZE)
        if state.shape != (batch, STATE_SIZE):
            raise ValueError(
                f"state must have shape ({batch}, {STATE_SIZE}), got {tuple(state.shape)}"
            )
        h1, c1, h2, c2 = (part.unsqueeze(0).contiguous() for part in state.chunk(4, dim=1))
        sequence, (h1, c1) = self.lstm1(steps, (h1, c1))
        sequence, (h2, c2) = self.lstm2(sequence, (h2, c2))
        return self.head(sequence), torch.cat([h1[0], c1[0], h2[0], c2[0]], dim=1)

    @staticmethod
    def _is_suffix(mask: torch.Tensor, lengths: torch.Tensor) -> bool:
        """``ValueError`` unless every row of ``mask`` marks a non-empty suffix as real."""
        steps = mask.shape[1]
        positions = torch.arange(steps, device=mask.device)
        if not torch.equal(mask, positions >= (steps - lengths).unsqueeze(1)):
            raise ValueError("a window's mask must mark a suffix of its frames as real")
        if bool((lengths == 0).any()):
            raise ValueError("a window must hold at least one real frame")
        return True

    def _last_real_state(
        self, windows: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor
    ) -> torch.Tensor:
        """The second LSTM's state ``(B, H)`` after each window's last real frame, its real
        frames moved to the front and packed (`torch.nn.utils.rnn.pack_padded_sequence`)."""
        self._is_suffix(mask, lengths)
        steps = windows.shape[1]
        positions = torch.arange(steps, device=windows.device)
        front = (positions + (steps - lengths).unsqueeze(1)) % steps  # real frames first
        moved = windows.gather(1, front.unsqueeze(2).expand_as(windows))
        packed = nn.utils.rnn.pack_padded_sequence(
            moved, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        sequence, _ = self.lstm1(packed)
        _, (hidden, _) = self.lstm2(sequence)
        return hidden[-1]


def _last_step(net: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
    """``(B, d)`` inputs as they are, the last step of ``(B, T, d)`` windows; ``ValueError``
    naming ``net``'s class for any other shape (the feed-forward nets read one observation)."""
    if inputs.dim() == 3:
        return inputs[:, -1, :]
    if inputs.dim() != 2:
        raise ValueError(
            f"{type(net).__name__} expects inputs of shape (B, d) or (B, T, d), got "
            f"{tuple(inputs.shape)}"
        )
    return inputs


class MLPQNet(nn.Module):
    """The PER notebook's MLP: Linear d->64, ReLU, 64->64, ReLU, 64->A (widths from ``hidden``).

    Accepts ``(B, d)`` or windows ``(B, T, d)``; of a window only the last step ``[:, -1, :]`` is
    used.
    """

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        hidden: Sequence[int] = (64, 64),
        *,
        dueling: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        check_integer("obs_dim", obs_dim, minimum=1)
        check_integer("n_actions", n_actions, minimum=1)
        hidden = tuple(hidden)
        if not hidden:
            raise ValueError(f"hidden must list at least one layer width, got {hidden!r}")
        for width in hidden:
            check_integer("hidden width", width, minimum=1)
        super().__init__()
        self.obs_dim = obs_dim
        self.n_actions = n_actions
        widths = (obs_dim, *hidden)
        with torch.device("meta"):
            layers: list[nn.Module] = []
            for fan_in, fan_out in zip(widths[:-2], widths[1:-1], strict=True):
                layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
            self.body = nn.Sequential(*layers)
            self.head = QHead(widths[-2], widths[-1], n_actions, dueling=dueling)
        self.to_empty(device="cpu")
        self.reset_parameters(generator)

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Initialise all weights with PyTorch's default distributions drawn from ``generator``."""
        init_default_(self, generator)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """Q-values ``(B, A)`` for ``(B, d)`` observations or the last step of ``(B, T, d)``."""
        return self.head(self.body(_last_step(self, inputs)))


class ConvQNet(nn.Module):
    """MinAtar's network: conv 3x3 (16) -> ReLU -> Linear 1024->128 -> ReLU -> Linear 128->A.

    Reads ``(B, d)`` frames or the last step of ``(B, T, d)`` windows, each a flattened
    channel-last ``(10, 10, n)`` frame (d = 100 n), as `rdqn.envs.minatar` observes them.
    """

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        *,
        dueling: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        check_integer("obs_dim", obs_dim, minimum=1)
        check_integer("n_actions", n_actions, minimum=1)
        if obs_dim % (FRAME * FRAME):
            raise ValueError(
                f"the conv network reads {FRAME}x{FRAME} frames (MinAtar's): an observation of "
                f"{FRAME * FRAME} x channels values, got {obs_dim}"
            )
        super().__init__()
        self.obs_dim = obs_dim
        self.n_actions = n_actions
        self.channels = obs_dim // (FRAME * FRAME)
        side = FRAME - 2
        with torch.device("meta"):
            self.conv = nn.Conv2d(self.channels, CONV_CHANNELS, kernel_size=3, stride=1)
            self.head = QHead(CONV_CHANNELS * side * side, CONV_HIDDEN, n_actions, dueling=dueling)
        self.to_empty(device="cpu")
        self.reset_parameters(generator)

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Initialise all weights with PyTorch's default distributions drawn from ``generator``."""
        init_default_(self, generator)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """Q-values ``(B, A)`` for ``(B, d)`` frames or the last step of ``(B, T, d)``."""
        frames = _last_step(self, inputs).reshape(-1, FRAME, FRAME, self.channels)
        frames = frames.permute(0, 3, 1, 2)
        return self.head(torch.relu(self.conv(frames)).flatten(1))


class LinearQNet(nn.Module):
    """Q(s, a) = W_a . s, without a bias: with one-hot observations this is exactly a Q-table
    (the PER paper's Blind Cliffwalk learner); a shared bias would couple every state. Reads the
    last step of a window like :class:`MLPQNet`.

    Weights start at zero, so every Q-value starts at 0, as a table would.
    """

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        check_integer("obs_dim", obs_dim, minimum=1)
        check_integer("n_actions", n_actions, minimum=1)
        super().__init__()
        self.obs_dim = obs_dim
        self.n_actions = n_actions
        self.out = nn.Linear(obs_dim, n_actions, bias=False)
        self.reset_parameters()

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Zero initialisation (no randomness, so `generator` is unused)."""
        nn.init.zeros_(self.out.weight)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if inputs.dim() == 3:
            inputs = inputs[:, -1, :]
        return self.out(inputs)


def build_q_network(
    kind: str,
    obs_dim: int,
    n_actions: int,
    *,
    dueling: bool = False,
    generator: torch.Generator | None = None,
    hidden: Sequence[int] = (64, 64),
) -> RecurrentQNet | MLPQNet | ConvQNet | LinearQNet:
    """Build a Q-network by name: ``"recurrent"``, ``"mlp"``, ``"conv"`` (MinAtar frames) or
    ``"linear"`` (tabular).

    ``hidden`` applies to the MLP only; the recurrent widths are fixed by the source notebooks.
    """
    if kind == "recurrent":
        return RecurrentQNet(obs_dim, n_actions, dueling=dueling, generator=generator)
    if kind == "mlp":
        return MLPQNet(obs_dim, n_actions, hidden, dueling=dueling, generator=generator)
    if kind == "conv":
        return ConvQNet(obs_dim, n_actions, dueling=dueling, generator=generator)
    if kind == "linear":
        if dueling:
            raise ValueError("dueling must be False for the linear network")
        return LinearQNet(obs_dim, n_actions)
    raise ValueError(f"network kind must be one of {NETWORK_KINDS}, got {kind!r}")


def count_parameters(module: nn.Module) -> int:
    """Number of scalar parameters in ``module`` (trainable or not; buffers excluded)."""
    return sum(p.numel() for p in module.parameters())


def parameter_bytes(module: nn.Module) -> int:
    """Bytes held by ``module``'s parameters alone.

    Excludes gradients, optimizer state, buffers and activations (seed protocol: report parameter
    bytes separately from peak process memory).
    """
    return sum(p.numel() * p.element_size() for p in module.parameters())
