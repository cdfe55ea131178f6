"""Step closures: functions the program asks to run once a step's tensors are materialised
(``add_step_closure``), to read losses or log without a sync of its own.

A synchronous closure runs in ``mark_step``, on the caller's thread, once the step's graphs
are launched (a read inside it waits for them). An asynchronous one (``run_async=True``)
runs on one closure thread, in the order closures were added, once the graphs in flight when
its step ended have run: the training loop goes on tracing meanwhile. An exception raised
by an asynchronous closure is kept and raised by the next ``mark_step`` or
``wait_device_ops``; the closures queued after it, and those of the step whose
``mark_step`` raises it, do not run (as in LTC and torch_xla).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable

from .. import state
from ..errors import LazygenRuntimeError

_pending: list[tuple[Callable, tuple, bool]] = []  # added, not run yet: (fn, args, async)
_queue: collections.deque = collections.deque()  # (launches to wait for, fn, args)
_lock = threading.Condition()
_worker: list[threading.Thread] = []  # the closure thread, started on first use
_error: list[BaseException] = []  # the first exception of an asynchronous closure
_running = [0]  # asynchronous closures taken off the queue and not finished


def add(fn: Callable, args=(), run_async: bool = False) -> None:
    """Run ``fn(*args)`` after the next ``mark_step`` (on the closure thread if
    ``run_async``)."""
    _pending.append((fn, tuple(args), run_async))


def run(in_flight: list) -> None:
    """``mark_step``'s last step: raise a kept exception of an asynchronous closure, else
    run the synchronous closures and queue the asynchronous ones behind ``in_flight`` (the
    step's runs, ``launches.Launch``)."""
    closures = list(_pending)
    _pending.clear()
    raise_kept_error()  # this step's closures do not run after a failed one
    for fn, args, run_async in closures:
        if run_async:
            _enqueue(list(in_flight), fn, args)
        else:
            fn(*args)


def _enqueue(launches: list, fn: Callable, args: tuple) -> None:
    with _lock:
        _queue.append((launches, fn, args))
        if not _worker or not _worker[0].is_alive():
            _worker[:] = [threading.Thread(target=_work, name="lazygen-step-closures", daemon=True)]
            _worker[0].start()
        _lock.notify_all()


def _work() -> None:
    while True:
        with _lock:
            while not _queue:
                _lock.wait()
            launches, fn, args = _queue.popleft()
            _running[0] += 1
        try:
            if not _error:
                for launch in launches:
                    launch.complete()  # its error stays for the program's own read
                fn(*args)
        except BaseException as error:  # kept for the program's thread
            with _lock:
                if not _error:
                    _error.append(error)
        finally:
            # The loop's names would hold the last closure's arguments (lazy tensors) until
            # the next closure comes: let go of them now.
            del launches, fn, args
            with _lock:
                _running[0] -= 1
                _lock.notify_all()


def raise_kept_error() -> None:
    """Raise the kept exception of an asynchronous closure, once."""
    with _lock:
        if not _error:
            return
        error = _error.pop()
        _queue.clear()  # closures queued after the failed one do not run
    raise LazygenRuntimeError(
        f"lazygen: an asynchronous step closure raised {type(error).__name__}: {error}"
    ) from error


def wait() -> None:
    """Wait until every queued asynchronous closure has run; raise a kept exception."""
    if not (_worker and _worker[0] is not threading.current_thread()):
        raise_kept_error()
        return
    with _lock:
        while _queue or _running[0]:
            _lock.wait()
    raise_kept_error()


def _reset() -> None:
    """Forget closures not run yet and a kept exception (queued ones are dropped)."""
    _pending.clear()
    with _lock:
        _queue.clear()
        _error.clear()


state.register(__name__, _reset, owns=("_pending", "_queue", "_error"))
state.once_per_process(
    __name__,
    ("_worker", "_running"),
    "the closure thread and the count of closures it is running: a reset keeps it going",
)
