"""A parallel map for work that is not a recorded run: one call of a function per item.

    for item, outcome in map_tasks(updates_to_solve, cells, workers=2):
        ...  # outcome: what updates_to_solve(item) returned, or the exception it raised

`map_tasks` runs ``func(item)`` for every item on the serving layer's workers and yields
``(item, outcome)`` pairs in the order the calls finish:

    processes (default)  each call in a worker process forked from the zygote that imported
                         rdqn once (`rdqn.serve.zygote`), at most ``workers`` at once (default:
                         one per usable core); a fork starts in milliseconds.
    Ray (``ray=...``)    each call a Ray task holding one CPU, on a local instance (``"local"``)
                         or a cluster (``"auto"``, ``"host:port"``); results come back to the
                         caller, nothing is written on the nodes.

``func`` must be a top-level function (pickled by reference, as `pickle` does); a lambda or a
nested function is refused at once with a `ValueError`. An exception raised by ``func`` is the
item's outcome (yielded, never raised), with the worker's traceback in its notes; an outcome
that cannot be pickled becomes a `TaskError` saying so. A worker that dies under a call (killed,
out of memory, its node lost) is retried ``retries`` times (default once), then its outcome is
a `WorkerLost` naming why; so is every call left when a local Ray loses a process of its own
(its raylet or control store), in one line. Closing the generator early (``break``) or Ctrl-C
ends the calls in flight: their workers are killed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pickle
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from tqdm import tqdm

from rdqn.limits import check_threads
from rdqn.serve.executors import ExecutorUnavailable, usable_cores
from rdqn.serve.zygote import Zygote, ZygoteWorker
from rdqn.validation import check_integer

__all__ = [
    "RAY_NEEDED",
    "TaskError",
    "WorkerLost",
    "map_tasks",
    "ray_module",
]

T = TypeVar("T")
R = TypeVar("R")

RAY_NEEDED = (
    "--ray needs Ray, which is not installed here: pip install -r requirements-ray.txt "
    "(or pip install 'rdqn[ray]')"
)
_POLL_S = 0.01
_RAY_WAIT_S = 1.0
"""How long one wait for a Ray task's answer lasts before Ray's own health is looked at."""


class TaskError(RuntimeError):
    """A call whose exception (or result) could not be sent back as it was; says what it was."""


class WorkerLost(RuntimeError):
    """The worker doing a call ended without an answer (killed, out of memory, node lost)."""


def ray_module() -> Any:
    """The ``ray`` module, or `ExecutorUnavailable` saying how to install it."""
    if importlib.util.find_spec("ray") is None:
        raise ExecutorUnavailable(RAY_NEEDED)
    import ray

    return ray


@dataclass(frozen=True)
class _Call:
    """One call for a forked worker (a `rdqn.serve.zygote.Job`): the function and its item are
    pickled apart, so the zygote never imports the caller's modules, only the worker does."""

    run_id: str
    payload: bytes

    def work(self, link: Connection) -> None:
        try:
            func, item = pickle.loads(self.payload)
            result = func(item)
        except BaseException as err:  # noqa: BLE001 - every failure is the item's outcome
            link.send(("error", _sendable(err)))
            return
        try:
            link.send(("result", result))
        except Exception as err:  # noqa: BLE001 - whatever pickling the result raises
            why = f"{type(err).__name__}: {err}"
            link.send(("error", TaskError(f"the result cannot be pickled to send back: {why}")))


def _sendable(error: BaseException) -> BaseException:
    """``error`` with the worker's traceback noted, or a `TaskError` where it does not pickle."""
    where = "".join(traceback.format_exception(error)).rstrip()
    try:
        error.add_note(f"in worker process {os.getpid()}:\n{where}")
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # noqa: BLE001 - whatever the error's own pickling raises
        return TaskError(f"{type(error).__name__}: {error}\n{where}")


def _check_picklable(func: Callable[..., Any]) -> None:
    try:
        pickle.dumps(func)
    except Exception as err:  # noqa: BLE001 - PicklingError, AttributeError, TypeError...
        raise ValueError(
            f"map_tasks needs a top-level function (workers import it by name), got {func!r}: {err}"
        ) from None


def map_tasks(
    func: Callable[[T], R],
    items: Iterable[T],
    *,
    workers: int | None = None,
    ray: str | None = None,
    progress: bool | str | None = None,
    retries: int = 1,
) -> Iterator[tuple[T, R | BaseException]]:
    """``(item, func(item))`` for every item, in the order the calls finish, computed on worker
    processes (default) or Ray (``ray``: ``"local"`` or a cluster's address); an exception is
    the item's outcome, not raised. See the module docstring.

    Args:
        workers: calls at once (default: one per usable core; under Ray, the CPUs of a local
            instance it starts, or of the cluster).
        ray: None for worker processes; ``"local"`` starts a Ray instance on this machine (shut
            down at the end), ``"auto"`` or ``"host:port"`` joins a cluster. A Ray already
            initialised in this process is used as it is.
        progress: a tqdm bar on stderr (True, or its label); None or False: none.
        retries: how often a call whose worker died is run again.

    Raises (at the call, before any work): `ValueError` for a function that cannot be pickled
    or a bad ``workers``/``retries``; `ExecutorUnavailable` when Ray is asked for and missing.
    """
    _check_picklable(func)
    retries = check_integer("retries", retries, minimum=0)
    if workers is not None:
        workers = check_integer("workers", workers, minimum=1)
        if ray is None:
            check_threads(workers, setting="workers")
    queue = list(items)
    if ray is not None:
        calls = _ray_map(func, queue, workers, ray, retries, ray_module())
    else:
        calls = _process_map(func, queue, workers or usable_cores(), retries)
    return _counted(calls, len(queue), progress)


def _counted(
    calls: Iterator[tuple[T, Any]], total: int, progress: bool | str | None
) -> Iterator[tuple[T, Any]]:
    bar = None
    if progress:
        label = progress if isinstance(progress, str) else "tasks"
        bar = tqdm(total=total, desc=label, unit="task", dynamic_ncols=True, mininterval=0.2)
    failed = 0
    try:
        for item, outcome in calls:
            if bar is not None:
                failed += isinstance(outcome, BaseException)
                bar.set_postfix_str(f"failed {failed}", refresh=False)
                bar.update(1)
            yield item, outcome
    finally:
        calls.close()  # type: ignore[attr-defined]  # a generator: ends the calls in flight
        if bar is not None:
            bar.close()


def _process_map(
    func: Callable[[T], Any], items: list[T], workers: int, retries: int
) -> Iterator[tuple[T, Any]]:
    zygote = Zygote()
    waiting: deque[tuple[int, int]] = deque((index, 0) for index in range(len(items)))
    running: dict[str, tuple[int, int, ZygoteWorker]] = {}
    try:
        while waiting or running:
            while waiting and len(running) < workers:
                index, attempt = waiting.popleft()
                try:
                    payload = pickle.dumps((func, items[index]))
                except Exception as err:  # noqa: BLE001 - an item that cannot be sent
                    yield items[index], TaskError(f"the item cannot be pickled: {err}")
                    continue
                call = _Call(f"task-{index}-{attempt}", payload)
                running[call.run_id] = (index, attempt, zygote.launch(call))
            answered = False
            for run_id, (index, attempt, worker) in list(running.items()):
                events = worker.events(0.0)
                if not events and worker.alive():
                    continue
                answered = True
                del running[run_id]
                if events:
                    kind, outcome = events[0]
                    worker.join(1.0)
                    yield items[index], outcome
                    continue
                reason = worker.exit_reason()
                worker.join(0.0)
                if attempt < retries:
                    waiting.appendleft((index, attempt + 1))
                else:
                    tries = f" ({attempt + 1} tries)" if attempt else ""
                    yield items[index], WorkerLost(f"{reason}{tries}")
            if not answered:
                time.sleep(_POLL_S)
    finally:
        for _, _, worker in running.values():
            worker.kill()
        for _, _, worker in running.values():
            with contextlib.suppress(Exception):
                worker.join(1.0)
        zygote.close()


def _call(func: Callable[[T], R], item: T) -> R:
    """A Ray task's body."""
    return func(item)


def _ray_map(
    func: Callable[[T], Any],
    items: list[T],
    workers: int | None,
    address: str,
    retries: int,
    ray: Any,
) -> Iterator[tuple[T, Any]]:
    from rdqn.serve.ray_executor import RayExecutor
    from rdqn.serve.ray_start import lost_line

    # Joins (or starts) Ray as the run executor does: the options, rdqn on the workers' path.
    executor = RayExecutor(address, num_cpus=workers if address == "local" else None)
    todo = deque(range(len(items)))
    flying: dict[Any, int] = {}
    try:
        remote = ray.remote(num_cpus=1, max_retries=retries, retry_exceptions=False)(_call)
        limit = workers or executor.capacity
        while todo or flying:
            gone = executor.lost()
            if gone is not None:  # Ray lost a process of its own: nothing more runs on it
                lost = lost_line(gone)
                for index in [*flying.values(), *todo]:
                    yield items[index], WorkerLost(lost)
                flying.clear()
                todo.clear()
                break
            while todo and len(flying) < 2 * limit:  # a few queued on the cluster, not all
                index = todo.popleft()
                flying[remote.remote(func, items[index])] = index
            ready, _ = ray.wait(list(flying), num_returns=1, timeout=_RAY_WAIT_S)
            for ref in ready:
                index = flying.pop(ref)
                yield items[index], _ray_outcome(ray, ref)
    finally:
        if executor.lost() is None:  # else a cancel would wait for the lost process
            for ref in flying:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
        executor.close()


def _ray_outcome(ray: Any, ref: Any) -> Any:
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as err:  # func raised: its own exception
        cause = getattr(err, "cause", None)
        return cause if isinstance(cause, BaseException) else TaskError(str(err))
    except ray.exceptions.RayError as err:  # the worker or its node died, retries spent
        from rdqn.serve.ray_executor import ray_lost

        return WorkerLost(ray_lost("the Ray worker", err))
