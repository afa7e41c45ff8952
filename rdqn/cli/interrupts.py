"""Ctrl-C and SIGTERM while a command trains: a request to stop, read between two steps.

Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to be. Inside a
compiled numba call that surfaces as ``SystemError: CPUDispatcher(...) returned a result with an
exception set``, and a run cut off inside a step cannot resume: it would be filed 'failed'.
While a `StopSignals` is active, the first SIGINT or SIGTERM only sets `reason`, which the run
loop reads between two steps (`rdqn.runs.lifecycle.run_to_end`, or a comparison's watch loop):
the run ends 'stopped' with its resume checkpoint. Ctrl-C pressed twice in a row (within
`ABORT_AFTER_S` of the first) is the same request: the run still stops between two steps and
saves its checkpoint, so it stays resumable. A SIGINT after that raises KeyboardInterrupt at
once, as Python would (a hard abort, for a stop that takes too long); a second SIGTERM changes
nothing. The previous handlers are restored on exit.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from types import FrameType, TracebackType

__all__ = ["ABORT_AFTER_S", "StopSignals"]

ABORT_AFTER_S = 5.0
"""Seconds after the first Ctrl-C during which another one asks for the same orderly stop."""

_REASONS = {signal.SIGINT: "stopped by Ctrl-C", signal.SIGTERM: "stopped by SIGTERM"}


class StopSignals:
    """A context manager: while active (in the main thread; elsewhere it does nothing), SIGINT
    and SIGTERM ask to stop. `requested` is the reason to pass as ``stop`` to a run loop."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.reason: str | None = None
        self._previous: dict[int, object] = {}
        self._first = 0.0  # when the first signal came (monotonic)
        self._told = False

    def requested(self) -> str | None:
        """The reason to stop (None: go on)."""
        return self.reason

    @property
    def exit_status(self) -> int | None:
        """128 + the signal's number (130 for Ctrl-C), as a shell reports a process it ended;
        None when no signal came."""
        return None if self.signum is None else 128 + self.signum

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum, self.reason = signum, _REASONS[signal.Signals(signum)]
            self._first = time.monotonic()
        elif signum == signal.SIGINT:
            if time.monotonic() - self._first >= ABORT_AFTER_S:
                raise KeyboardInterrupt
            if not self._told:
                self._told = True
                print(
                    "rdqn: stopping after this step, saving the run to resume "
                    f"(Ctrl-C again after {ABORT_AFTER_S:g} s abandons it)",
                    file=sys.stderr,
                )

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in _REASONS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            # None: a handler not installed from Python, which cannot be put back; the default.
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # type: ignore[arg-type]
        self._previous.clear()
