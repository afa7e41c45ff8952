"""The progress bar of a training run on stderr (tqdm)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np
from tqdm import tqdm

from rdqn.compare import ROLLING_WINDOW
from rdqn.training.trainer import Trainer


class Progress:
    """A tqdm bar on stderr: env steps, steps per second and the recent mean return."""

    def __init__(self, total: int, label: str, enabled: bool, position: int | None = None) -> None:
        self.bar = tqdm(
            total=total,
            desc=label,
            unit="step",
            unit_scale=False,
            disable=not enabled,
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=0.2,
            position=position,
        )

    def show(self, env_steps: int, returns: Sequence[float]) -> None:
        recent = returns[-ROLLING_WINDOW:]
        if len(recent):
            self.bar.set_postfix_str(f"return {np.mean(recent):.1f}", refresh=False)
        self.bar.update(env_steps - self.bar.n)

    def __call__(self, trainer: Trainer) -> None:
        self.show(trainer.env_steps, trainer.recorder.episode_returns)

    def close(self) -> None:
        self.bar.close()
