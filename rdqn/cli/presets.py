"""``rdqn presets``: one line per preset, with the settings that tell them apart."""

from __future__ import annotations

from rdqn.presets import PRESETS, preset


def cmd_presets() -> int:
    """Print the presets; the exit status (0)."""
    for name in PRESETS:
        c = preset(name)
        print(
            f"{name:13s} net={c.agent.network:9s} replay={c.replay.scheme:12s} "
            f"target={c.agent.target_update:4s} env={c.env.id} capacity={c.replay.capacity:,} "
            f"batch={c.replay.batch_size} window={c.replay.window}"
        )
    return 0
