"""Periodic checkpoints of a training run: how often, and at what cost.

While it trains, a recorded run writes its rows and a resume checkpoint every
`checkpoint_period` seconds (``$RDQN_CHECKPOINT_EVERY``, default 60 s), so a run whose
process dies loses at most that stretch and resumes from there exactly (`rdqn.runs.resume`, inside
an episode too). A save hashes the replay memory and writes what changed since the last one (the
rows written since, and the priorities: `rdqn.runs.checkpoint_chunks`). Whatever saves cost, the
next one waits at least the cheaper of the last two / `MAX_CHECKPOINT_SHARE`, so saving takes
no more than about 2 % of a run's time (a short period on a slow disk included), and one slow
save (the first loads what saving needs) does not push the next one away.
`rdqn.runs.lifecycle.RecordedRun.record_progress` saves them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

__all__ = ["CHECKPOINT_EVERY_S", "MAX_CHECKPOINT_SHARE", "checkpoint_period", "next_checkpoint_gap"]

CHECKPOINT_EVERY_S = 60.0
"""Seconds between two periodic resume checkpoints of a training run (the default)."""
MAX_CHECKPOINT_SHARE = 0.02
"""The most of a run's time periodic checkpoints may take."""


def checkpoint_period(environ: Mapping[str, str] | None = None) -> float | None:
    """Seconds between periodic checkpoints: ``$RDQN_CHECKPOINT_EVERY`` (``0`` or ``off``: none),
    default `CHECKPOINT_EVERY_S`. Anything but a number >= 0 raises ``ValueError``."""
    raw = (os.environ if environ is None else environ).get("RDQN_CHECKPOINT_EVERY", "").strip()
    if not raw:
        return CHECKPOINT_EVERY_S
    if raw.lower() == "off":
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(
            f"RDQN_CHECKPOINT_EVERY must be a number of seconds >= 0 (0 or 'off': no periodic "
            f"checkpoints), got {raw!r}"
        )
    return seconds or None


def next_checkpoint_gap(period: float, cost: float) -> float:
    """Seconds from the end of one periodic save to the next: the period, or longer when a save
    costs more than `MAX_CHECKPOINT_SHARE` of it."""
    return max(period, cost / MAX_CHECKPOINT_SHARE)
