"""A run's status and its one writer, `record_status` (where it may be called:
`rdqn.runs.lifecycle`), and the writes a run makes about itself while it trains (`RunRecords`).

Its own module, below the lifecycle and the store that both call it, so that neither imports
the other for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rdqn.runs.checkpoint_chunks import Chunks

__all__ = ["Counters", "RunRecords", "record_status"]

Counters = tuple[int, int, int]
"""(env steps, updates, episodes)."""


class RunRecords(Protocol):
    """The writes a run makes about itself while it trains.

    `rdqn.runs.store.RunStore` makes them; a worker that cannot reach the server's store relays
    them to it (`rdqn.serve.protocol.RecordRelay`), and the server's `RunStore` makes them there.
    """

    def set_status(
        self,
        run_id: str,
        status: str,
        error: str | None = None,
        *,
        expect: Mapping[str, Any] | None = None,
        rewind: Counters | None = None,
    ) -> bool | None:
        """Only through `record_status`."""
        ...

    def write_metrics(self, run_id: str, **rows: Any) -> None:
        """Episode and step rows and progress counters (`RunStore.write_metrics`)."""
        ...

    def set_manifest(self, run_id: str, manifest: Mapping[str, Any]) -> None: ...

    def save_checkpoint(
        self,
        run_id: str,
        data: bytes,
        *,
        chunks: Chunks | None = None,
        resume_env_steps: int | None = None,
    ) -> Path | None: ...


def record_status(
    records: RunRecords,
    run_id: str,
    status: str,
    error: str | None = None,
    *,
    expect: Mapping[str, Any] | None = None,
    rewind: Counters | None = None,
) -> bool | None:
    """Record a run's status and its reason (``error``; None clears it): the one function that
    writes a status, called only where the module docstring says.

    ``expect``: column -> value the run must still have in the store, or nothing is written (a
    process that died is marked stopped only if nobody took its run meanwhile; a resume takes a
    run only if it is still stopped as its checkpoint was checked). ``rewind``: a resume's
    counters: rows past them are dropped and the progress set back to them, with the status.
    Returns whether it was written (`RunStore.set_status`); None when the write is relayed to a
    server, whose store decides.
    """
    return records.set_status(run_id, status, error, expect=expect, rewind=rewind)
