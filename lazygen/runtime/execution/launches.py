"""Graph runs in flight: ``mark_step`` launches a graph and returns while it runs, so that
tracing the next step overlaps with executing this one (as LTC does).

A ``Launch`` owns one run. Its outputs are ``DeviceData`` nodes whose data is delivered when
someone first needs it (a read, the next graph that takes it as input, ``mark_step`` settling
finished runs, ``wait_device_ops``). A run that failed keeps its error: every read of the
outputs that depend on the failed node raises it; the executor's ``fail`` callback has put
the traced IR back on the other tensors, which sync on their own. A graph that failed before
it ran (lowering, compiling, a failed input) gives its tensors a ``FailedRun`` instead.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import threading
import time
import weakref
from collections.abc import Callable

from .. import state
from ..errors import frame_free
from ..ir import DeviceData


class Launch:
    """One graph run in flight on a backend (``handle.wait()`` returns its results)."""

    __slots__ = (
        "_handle",
        "_inputs",
        "_nodes",
        "_finish",
        "_fail",
        "_lock",
        "_error",
        "_reported",
        "__weakref__",
    )

    def __init__(
        self,
        handle,
        inputs: list,
        finish: Callable[[list], list],
        fail: Callable[[BaseException, list[DeviceData]], BaseException],
    ) -> None:
        self._handle = handle
        self._inputs = inputs  # what the run reads; retired with the handle (see _retire)
        self._nodes: list[DeviceData] = []
        self._finish = finish  # raw backend results -> one tensor per output
        self._fail = fail  # (the run's exception, its outputs) -> the error to raise
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        self._reported = False
        state.for_process(InFlight).launches.add(self)

    def outputs(self, shapes: list, backend, placements) -> list[DeviceData]:
        """The nodes of the graph's outputs, one per shape, in the order of its outputs
        (``backend``: the backend whose non-torch data they will hold, None for torch data;
        ``placements``: each one's layout; see ``DeviceData``). All at once: a step's graphs
        have hundreds of outputs, and a call per output cost a third more."""
        nodes = [
            DeviceData(None, self, shape, backend, placement)
            for shape, placement in zip(shapes, placements, strict=True)
        ]
        self._nodes += nodes
        return nodes

    def wait(self, unreported_only: bool = False) -> None:
        """Wait for the run; deliver its outputs, or raise its error: every time (a read of
        an output that never came), or with ``unreported_only`` only if nobody saw it yet
        (``mark_step`` settling runs)."""
        self.complete()
        if self._error is not None and not (unreported_only and self._reported):
            self._reported = True
            raise frame_free(self._error)  # a copy: the stored one keeps no reader's frames

    def complete(self) -> None:
        """Wait for the run and deliver its outputs, or keep its error for whoever reads or
        settles it (an asynchronous step closure waits so, raising nothing)."""
        with self._lock:
            handle = self._handle
            if handle is not None:
                self._handle = None
                nodes, finish, fail = self._nodes, self._finish, self._fail
                self._nodes = self._finish = self._fail = None
                state.for_process(InFlight).launches.discard(self)
                try:
                    results = finish(handle.wait())
                except BaseException as error:  # re-raised below, described
                    self._error = frame_free(fail(error, nodes))  # no frames kept
                else:
                    for node, data in zip(nodes, results, strict=True):
                        node.deliver(data)
                finally:
                    _retire(handle, self._inputs)
                    self._inputs = None


class FailedRun:
    """Where the data of a tensor whose graph failed would have come from: every read raises
    the graph's error again (``DeviceData.failed``). Such a tensor is no longer pending, so
    later steps never sync it again: one failed graph does not fail every later one."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def wait(self, unreported_only: bool = False) -> None:
        raise frame_free(self.error)


class InFlight:
    """The runs of the process (a share of ``state.process``: a reset must not drop a run
    that torch's or the backend's worker threads are still executing, and the process
    waits for them at exit): ``launches``, the runs not completed yet, and ``retired``,
    the handle and inputs of the last finished run.

    A finished run's handle and inputs are each dropped when the next run is retired. The
    worker thread lets go of a run's inputs and results (held by its future) just after
    the future completes, and it must not be the last to let go of a tensor that has a
    Python object by then (the results, once read): that release takes the GIL, which
    stalls the worker while the tracing thread holds it, and aborts the process
    ("terminate called without an active exception") if it happens while the interpreter
    shuts down. Kept here one run longer, the last release is a Python thread's."""

    __slots__ = ("launches", "retired")

    def __init__(self) -> None:
        self.launches: weakref.WeakSet[Launch] = weakref.WeakSet()
        self.retired: collections.deque = collections.deque(maxlen=1)


def retired() -> collections.deque:
    """The handle and inputs of the last finished run (see ``InFlight``)."""
    return state.for_process(InFlight).retired


def _retire(handle, inputs) -> None:
    retired().append((handle, inputs))


def settle(in_flight: list[Launch], lock, count: int | None = None) -> None:
    """Wait for the oldest ``count`` runs in ``in_flight`` (all by default), oldest first,
    and drop them from it; raise the first failure nobody saw yet (the others are still
    raised by reads of their outputs). ``lock`` guards the list (other threads sync the
    same device); it is not held while waiting."""
    while count is None or count > 0:
        with lock:
            if not in_flight:
                return
            launch = in_flight.pop(0)
        launch.wait(unreported_only=True)
        if count is not None:
            count -= 1


@atexit.register
def _wait_at_exit() -> None:
    """Let runs still in flight finish before the interpreter tears down, and give the
    workers the moment they take to let go of the last runs' tensors (microseconds after
    completing), so that the retired handles die on this thread."""
    runs = state.for_process(InFlight)
    for launch in list(runs.launches):
        with contextlib.suppress(Exception):  # nobody is left to read the error
            launch.wait()
    if runs.retired:
        time.sleep(0.01)
