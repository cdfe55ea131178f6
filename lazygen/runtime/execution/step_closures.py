"""Step closures: functions the program asks to run once a step's tensors are materialised
(``add_step_closure``), to read losses or log without a sync of its own.

A synchronous closure runs in ``mark_step``, on the caller's thread, once the step's graphs
are launched (a read inside it waits for them). An asynchronous one (``run_async=True``)
runs on one closure thread, in the order closures were added, once the graphs in flight when
its step ended have run: the training loop goes on tracing meanwhile. An exception raised
by an asynchronous closure is kept and raised by the next ``mark_step`` or
``wait_device_ops``; the closures queued after it, and those of the step whose
``mark_step`` raises it, do not run (as in LTC and torch_xla).

The closures of a run are a part of the runtime object (``Closures``): a reset drops the
pending and queued ones and a kept exception, and the old closure thread ends once the
closure it is running (if any) returns.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable

from .. import state
from ..errors import LazygenRuntimeError


class Closures:
    """The step closures of one runtime (a part of ``state.runtime``)."""

    def __init__(self) -> None:
        self.pending: list[tuple[Callable, tuple, bool]] = []  # added, not run: (fn, args, async)
        self.queue: collections.deque = collections.deque()  # (launches to wait for, fn, args)
        self.lock = threading.Condition()
        self.worker: threading.Thread | None = None  # the closure thread, started on first use
        self.errors: list[BaseException] = []  # the first exception of an async closure
        self.running = 0  # asynchronous closures taken off the queue and not finished
        self.retired = False  # a reset replaced this part: its thread ends

    def on_reset(self) -> None:
        """Drop the closures not run yet and a kept exception; let the thread end."""
        with self.lock:
            self.pending.clear()
            self.queue.clear()
            self.errors.clear()
            self.retired = True
            self.lock.notify_all()


def add(fn: Callable, args=(), run_async: bool = False) -> None:
    """Run ``fn(*args)`` after the next ``mark_step`` (on the closure thread if
    ``run_async``)."""
    state.part(Closures).pending.append((fn, tuple(args), run_async))


def run(in_flight: list) -> None:
    """``mark_step``'s last step: raise a kept exception of an asynchronous closure, else
    run the synchronous closures and queue the asynchronous ones behind ``in_flight`` (the
    step's runs, ``launches.Launch``)."""
    closures = state.part(Closures)
    taken = list(closures.pending)
    closures.pending.clear()
    raise_kept_error()  # this step's closures do not run after a failed one
    for fn, args, run_async in taken:
        if run_async:
            _enqueue(closures, list(in_flight), fn, args)
        else:
            fn(*args)


def _enqueue(closures: Closures, launches: list, fn: Callable, args: tuple) -> None:
    with closures.lock:
        closures.queue.append((launches, fn, args))
        if closures.worker is None or not closures.worker.is_alive():
            closures.worker = threading.Thread(
                target=_work, args=(closures,), name="lazygen-step-closures", daemon=True
            )
            closures.worker.start()
        closures.lock.notify_all()


def _work(closures: Closures) -> None:
    lock = closures.lock
    while True:
        with lock:
            while not closures.queue:
                if closures.retired:
                    return
                lock.wait()
            launches, fn, args = closures.queue.popleft()
            closures.running += 1
        try:
            if not closures.errors:
                for launch in launches:
                    launch.complete()  # its error stays for the program's own read
                fn(*args)
        except BaseException as error:  # kept for the program's thread
            with lock:
                if not closures.errors:
                    closures.errors.append(error)
        finally:
            # The loop's names would hold the last closure's arguments (lazy tensors) until
            # the next closure comes: let go of them now.
            del launches, fn, args
            with lock:
                closures.running -= 1
                lock.notify_all()


def raise_kept_error() -> None:
    """Raise the kept exception of an asynchronous closure, once."""
    closures = state.part(Closures)
    with closures.lock:
        if not closures.errors:
            return
        error = closures.errors.pop()
        closures.queue.clear()  # closures queued after the failed one do not run
    raise LazygenRuntimeError(
        f"lazygen: an asynchronous step closure raised {type(error).__name__}: {error}"
    ) from error


def wait() -> None:
    """Wait until every queued asynchronous closure has run; raise a kept exception."""
    closures = state.part(Closures)
    worker = closures.worker
    if worker is None or worker is threading.current_thread():
        raise_kept_error()
        return
    with closures.lock:
        while closures.queue or closures.running:
            closures.lock.wait()
    raise_kept_error()
