"""Telemetry: what a run shows the outside world, as immutable snapshots of plain arrays.

The `Trainer` owns one `TelemetryRecorder` and feeds it as it goes; `snapshot()` copies what the
recorder holds into a frozen `Telemetry`, which is safe to hand to another thread (the dashboard)
because nothing in it is shared with the training loop. Snapshots carry pre-binned histograms,
never per-slot arrays of the buffer.

Replay internals recorded (the dashboard's "Replay internals" and "Sum tree" pages):
- the distribution of N * P(i) over the buffer (1 = what uniform replay would give), now and over
  time (a heatmap, like TensorBoard's histogram view), on fixed log10 bins;
- the last batch: slots, P(i), IS weights, |TD errors|, ages, and its effective sample size
  ESS = (sum w)^2 / sum w^2 (B when all weights are equal);
- IS-weight distribution over time (log10 bins); |TD error| distributions at chosen
  stages of training;
- sample counts by age (which buffer positions get replayed);
- the sampler check: a diagnostic draw from the current priorities, binned by slot (by rank for
  rank-based replay), against the expected counts sum_{i in bin} P(i) * draws, tested with the
  null law of stratified draws (`rdqn.training.sampler_check`);
- the top levels of the sum tree.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.state_checks import (
    ReplayStateError,
    array_field,
    entry,
    mapping,
    refuse,
    require_finite,
    require_nonnegative,
)
from rdqn.training.sampler_check import GoodnessOfFit
from rdqn.training.snapshot import (
    AGE_BINS,
    RELATIVE_PROBABILITY_EDGES,
    TD_STAGES,
    WEIGHT_EDGES,
    WEIGHT_RANGE,
    BatchView,
    Histogram,
    HistogramHistory,
    Telemetry,
    effective_sample_size,
    relative_probability_histogram,
    weight_histogram,
)
from rdqn.validation import shown

__all__ = [
    "BatchView",
    "GoodnessOfFit",
    "Histogram",
    "HistogramHistory",
    "Telemetry",
    "TelemetryRecorder",
    "effective_sample_size",
    "relative_probability_histogram",
    "weight_histogram",
]

_STAGE_KEYS = tuple((stage, f"{stage:.0%}") for stage in TD_STAGES)

_F64, _I64 = np.dtype(np.float64), np.dtype(np.int64)
_HISTORY_ROWS = 400
"""The most recent histograms a history keeps."""
_RECENT_TD = 32
"""The most recent batches' |TD errors| kept for the |TD error| stages."""
_TD_BINS = 30
_WEIGHT_BINS = len(WEIGHT_EDGES) - 1


def _require_counts(name: str, counts: NDArray[np.float64]) -> None:
    require_finite(name, counts)
    require_nonnegative(name, counts)


def found_length(value: Any) -> str:
    """What a list field is, for an error message."""
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"a {type(value).__name__}"


class _HistoryBuilder:
    def __init__(self, edges: NDArray[np.float64], limit: int = _HISTORY_ROWS) -> None:
        self.edges = edges
        self.steps: deque[int] = deque(maxlen=limit)
        self.rows: deque[NDArray[np.float64]] = deque(maxlen=limit)

    def add(self, step: int, counts: NDArray[np.float64]) -> None:
        self.steps.append(step)
        self.rows.append(counts)

    def freeze(self) -> HistogramHistory:
        counts = np.array(self.rows) if self.rows else np.zeros((0, len(self.edges) - 1))
        return HistogramHistory(
            edges=self.edges.copy(), steps=np.array(self.steps, dtype=np.int64), counts=counts
        )

    def state_dict(self) -> dict[str, Any]:
        frozen = self.freeze()
        return {"steps": frozen.steps, "counts": frozen.counts}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.steps.clear()
        self.rows.clear()
        self.steps.extend(int(step) for step in state["steps"])
        self.rows.extend(np.array(row, dtype=np.float64) for row in state["counts"])


# The recorder's per-episode and per-logged-update series, with their dtypes.
_SERIES: tuple[tuple[str, type], ...] = (
    ("episode_returns", np.float64),
    ("episode_end_steps", np.int64),
    ("episode_lengths", np.int64),
    ("log_updates", np.int64),
    ("losses", np.float64),
    ("td_abs_mean", np.float64),
    ("q_mean", np.float64),
    ("ess", np.float64),
)


class TelemetryRecorder:
    """Mutable accumulator owned by the training loop (one thread); see `snapshot` for readers."""

    def __init__(self, *, planned_updates: int, max_points: int = 20_000) -> None:
        from rdqn.training.telemetry_kernels import count_batch_kernel  # not in a web server

        self._count_batch = count_batch_kernel
        self.planned_updates = planned_updates
        self.episode_returns: list[float] = []
        self.episode_end_steps: list[int] = []
        self.episode_lengths: list[int] = []
        self.log_updates: deque[int] = deque(maxlen=max_points)
        self.losses: deque[float] = deque(maxlen=max_points)
        self.td_abs_mean: deque[float] = deque(maxlen=max_points)
        self.q_mean: deque[float] = deque(maxlen=max_points)
        self.ess: deque[float] = deque(maxlen=max_points)
        self.last_batch: BatchView | None = None
        self.priority_history = _HistoryBuilder(RELATIVE_PROBABILITY_EDGES)
        self.weight_history = _HistoryBuilder(WEIGHT_EDGES)
        self._weight_counts = np.zeros(len(WEIGHT_EDGES) - 1)
        self._recent_td: deque[NDArray[np.float64]] = deque(maxlen=_RECENT_TD)
        self.td_stages: dict[str, Histogram] = {}
        self._age_counts = np.zeros(AGE_BINS)
        self._rate_marks: deque[tuple[float, int]] = deque(maxlen=64)
        self.started = time.perf_counter()

    def state_dict(self) -> dict[str, Any]:
        """Everything the charts show so far, as numpy arrays (a resumed run continues them);
        the last batch and the step rate start afresh."""
        state: dict[str, Any] = {
            name: np.array(getattr(self, name), dtype=dtype) for name, dtype in _SERIES
        }
        state.update(
            priority_history=self.priority_history.state_dict(),
            weight_history=self.weight_history.state_dict(),
            weight_counts=self._weight_counts.copy(),
            recent_td=[td.copy() for td in self._recent_td],
            td_stages={
                key: {"edges": h.edges.copy(), "counts": h.counts.copy()}
                for key, h in self.td_stages.items()
            },
            age_counts=self._age_counts.copy(),
        )
        return state

    def check_state(
        self,
        state: Any,
        *,
        env_steps: int,
        updates: int,
        episodes: int,
        log_every: int,
        histogram_every: int,
        batch_size: int,
    ) -> None:
        """Refuse (`ReplayStateError`, a ``ValueError`` naming the field) a :meth:`state_dict`
        read back from a checkpoint that this recorder could not have written after the given
        counts of a run with these settings; changes nothing.

        Checked: every array's type, dtype and shape, which the counters determine (one entry
        per episode; one per logged update, the most recent `max_points`; one histogram row
        every ``histogram_every`` updates, the most recent 400; the last 32 batches' |TD
        errors|; the |TD error| stages reached); the update numbers the logged series and
        histograms were recorded at; episodes that end in order within the env steps, each as
        long as it can be; every value finite, and counts, |TD errors|, losses and ESS >= 0.
        """
        state = mapping(state, "telemetry state")
        n = episodes
        returns = array_field(state, "episode_returns", (n,), _F64)
        require_finite("episode_returns", returns)
        ends = array_field(state, "episode_end_steps", (n,), _I64)
        lengths = array_field(state, "episode_lengths", (n,), _I64)
        if n:
            starts = np.concatenate([[0], ends[:-1]])
            if not (ends[0] >= 1 and (ends > starts).all() and ends[-1] <= env_steps):
                refuse(
                    f"episode_end_steps must increase from 1 to at most the {env_steps:,} env "
                    f"steps, got {shown(ends.tolist(), 80)}"
                )
            bad = (lengths < 1) | (lengths > ends - starts)
            if bad.any():
                k = int(np.argmax(bad))
                refuse(
                    f"episode_lengths[{k}] is {lengths[k]}; episode {k + 1} ended at env step "
                    f"{ends[k]:,}, {ends[k] - starts[k]:,} steps after the one before, so its "
                    f"length is from 1 to {ends[k] - starts[k]:,}"
                )
        logged = updates // log_every
        kept = min(logged, self.log_updates.maxlen or logged)
        expected = log_every * np.arange(logged - kept + 1, logged + 1, dtype=np.int64)
        self._check_steps(state, "log_updates", expected, updates)
        for name in ("losses", "td_abs_mean", "q_mean", "ess"):
            series = array_field(state, name, (kept,), _F64)
            require_finite(name, series)
            if name != "q_mean":
                require_nonnegative(name, series)
        recorded = updates // histogram_every
        rows = min(recorded, _HISTORY_ROWS)
        steps = histogram_every * np.arange(recorded - rows + 1, recorded + 1, dtype=np.int64)
        for name, edges in (
            ("priority_history", RELATIVE_PROBABILITY_EDGES),
            ("weight_history", WEIGHT_EDGES),
        ):
            history = mapping(entry(state, name), name)
            try:
                self._check_steps(history, "steps", steps, updates)
                counts = array_field(history, "counts", (rows, len(edges) - 1), _F64)
                _require_counts("counts", counts)
            except ReplayStateError as err:
                raise ReplayStateError(f"{name}: {err}") from None
        _require_counts("weight_counts", array_field(state, "weight_counts", (_WEIGHT_BINS,), _F64))
        _require_counts("age_counts", array_field(state, "age_counts", (AGE_BINS,), _F64))
        recent = entry(state, "recent_td")
        if not isinstance(recent, list) or len(recent) != min(updates, _RECENT_TD):
            refuse(
                f"recent_td must be a list of the last {min(updates, _RECENT_TD)} batches' |TD "
                f"errors|, got {found_length(recent)}"
            )
        for k, td in enumerate(recent):
            td = array_field({f"recent_td[{k}]": td}, f"recent_td[{k}]", (batch_size,), _F64)
            require_finite(f"recent_td[{k}]", td)
            require_nonnegative(f"recent_td[{k}]", td)
        stages = mapping(entry(state, "td_stages"), "td_stages")
        reached = [
            key for stage, key in _STAGE_KEYS if updates and updates >= stage * self.planned_updates
        ]
        if sorted(stages) != sorted(reached):
            refuse(
                f"td_stages holds {shown(sorted(map(str, stages)))}, but after {updates:,} of "
                f"{self.planned_updates:,} updates the stages reached are {reached}"
            )
        for key in reached:
            stage = mapping(stages[key], f"td_stages[{key!r}]")
            edges = array_field(stage, "edges", (_TD_BINS + 1,), _F64)
            require_finite(f"td_stages[{key!r}] edges", edges)
            if not (edges[0] == 0 and (np.diff(edges) > 0).all()):
                refuse(f"td_stages[{key!r}] edges must increase from 0")
            _require_counts(
                f"td_stages[{key!r}] counts", array_field(stage, "counts", (_TD_BINS,), _F64)
            )

    @staticmethod
    def _check_steps(
        state: Mapping[str, Any], key: str, expected: NDArray[np.int64], updates: int
    ) -> None:
        steps = array_field(state, key, expected.shape, _I64)
        if not np.array_equal(steps, expected):
            refuse(
                f"{key} must be the updates {shown(expected.tolist(), 80)} after {updates:,} "
                f"updates, got {shown(steps.tolist(), 80)}"
            )

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        for name, _ in _SERIES:
            series = getattr(self, name)
            series.clear()
            series.extend(np.asarray(state[name]).tolist())
        self.priority_history.load_state_dict(state["priority_history"])
        self.weight_history.load_state_dict(state["weight_history"])
        self._weight_counts[:] = state["weight_counts"]
        self._recent_td.clear()
        self._recent_td.extend(np.array(td, dtype=np.float64) for td in state["recent_td"])
        self.td_stages = {
            key: Histogram(
                edges=np.array(h["edges"], dtype=np.float64),
                counts=np.array(h["counts"], dtype=np.float64),
            )
            for key, h in state["td_stages"].items()
        }
        self._age_counts[:] = state["age_counts"]

    def on_episode(self, episode_return: float, end_step: int, length: int) -> None:
        self.episode_returns.append(episode_return)
        self.episode_end_steps.append(end_step)
        self.episode_lengths.append(length)

    def on_update(
        self,
        *,
        update: int,
        indices: NDArray[np.int64],
        generations: NDArray[np.int64],
        probabilities: NDArray[np.float64],
        weights: NDArray[np.float64],
        td_abs: NDArray[np.float64],
        ages: NDArray[np.int64],
        buffer_size: int,
        loss: float,
        q_mean: float,
        log: bool,
    ) -> BatchView:
        """Record one update; returns the batch view (the trainer reuses its ESS)."""
        view = BatchView(
            indices=indices,
            generations=generations,
            probabilities=probabilities,
            weights=weights,
            td_abs=td_abs,
            ages=ages,
            ess=effective_sample_size(weights),
        )
        self.last_batch = view
        self._count_batch(
            np.ascontiguousarray(weights, np.float64),
            np.ascontiguousarray(ages, np.int64),
            buffer_size,
            WEIGHT_EDGES,
            *WEIGHT_RANGE,
            self._weight_counts,
            self._age_counts,
        )
        self._recent_td.append(td_abs)
        if log:
            self.log_updates.append(update)
            self.losses.append(loss)
            self.td_abs_mean.append(float(td_abs.mean()))
            self.q_mean.append(q_mean)
            self.ess.append(view.ess)
        for stage, key in _STAGE_KEYS:
            if key not in self.td_stages and update >= stage * self.planned_updates:
                recent = np.concatenate(self._recent_td)
                top = max(float(recent.max()), 1e-12)
                self.td_stages[key] = Histogram.of(recent, np.linspace(0.0, top, _TD_BINS + 1))
        return view

    def on_histograms(self, update: int, probabilities: NDArray[np.float64]) -> None:
        """Record the buffer's N*P(i) distribution and the IS weights since the last call."""
        n = probabilities.shape[0]
        if n:
            self.priority_history.add(
                update, relative_probability_histogram(probabilities, n).counts
            )
        self.weight_history.add(update, self._weight_counts.copy())
        self._weight_counts[:] = 0

    def mark_rate(self, env_steps: int) -> float:
        """Env steps per second over the last few marks."""
        now = time.perf_counter()
        self._rate_marks.append((now, env_steps))
        while len(self._rate_marks) > 2 and now - self._rate_marks[0][0] > 3.0:
            self._rate_marks.popleft()
        (t0, s0), (t1, s1) = self._rate_marks[0], self._rate_marks[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 else 0.0

    def snapshot(self, **fields_: Any) -> Telemetry:
        """Freeze the recorder; `fields_` supplies what the trainer knows (counters, tree, ...)."""
        age_counts = self._age_counts.copy()
        return Telemetry(
            episode_returns=np.array(self.episode_returns, dtype=np.float64),
            episode_end_steps=np.array(self.episode_end_steps, dtype=np.int64),
            episode_lengths=np.array(self.episode_lengths, dtype=np.int64),
            log_updates=np.array(self.log_updates, dtype=np.int64),
            losses=np.array(self.losses, dtype=np.float64),
            td_abs_mean=np.array(self.td_abs_mean, dtype=np.float64),
            q_mean=np.array(self.q_mean, dtype=np.float64),
            ess=np.array(self.ess, dtype=np.float64),
            last_batch=self.last_batch,
            priority_history=self.priority_history.freeze(),
            weight_history=self.weight_history.freeze(),
            td_stages=dict(self.td_stages),
            age_counts=Histogram(np.linspace(0.0, 1.0, AGE_BINS + 1), age_counts)
            if age_counts.sum()
            else None,
            **fields_,
        )
