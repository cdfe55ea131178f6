"""A graph that failed: its error named after the failing node, and carried by every
tensor whose value depends on that node, so reading one raises it and no later step syncs
it again.

Apart from the executor because the same rules serve a run that fails at once (``sync``),
one that fails while in flight (``running.launch``), and a compile that fails.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import metrics
from ..devices import LazyDevice
from ..errors import LazygenRuntimeError, LazyGraphError
from ..ir import DeviceData, InputWrite, Node, Value
from ..state import for_process
from ..tracing.tensor import LazyTensor
from .launches import FailedRun


class _Explainers(list):
    """Functions that recognise a run's failure as caused outside the graph (another rank
    of the job died: ``distributed.peers``), each returning the error to raise instead, or
    None (a share of ``state.process``: registered once, by the module that installs them,
    for as long as what they watch lives)."""


def register_explainer(explain: Callable[[BaseException], LazyGraphError | None]) -> None:
    """Add ``explain`` (once) to what ``execution_error`` asks first."""
    explainers = for_process(_Explainers)
    if explain not in explainers:
        explainers.append(explain)


def execution_error(device, order: list[Node], inputs: list, error) -> LazyGraphError:
    """Name the node that failed (the backend re-runs the graph node by node when it can),
    unless an explainer names a cause outside the graph (then nothing is re-run)."""
    metrics.count("ExecutionError")
    for explain in for_process(_Explainers):
        explained = explain(error)
        if explained is not None:
            return explained
    backend = device.backend
    # The diagnosis re-runs the graph node by node, but never its writes into the caller's
    # tensors (``InputWrite``): it must not change what the failed run left there.
    order = [node for node in order if type(node) is not InputWrite]
    try:
        found = backend.locate_failure(order, inputs)
    except Exception:  # diagnosis is best effort; report the original error
        found = None
    if found is None:
        return LazyGraphError("execution", None, error, backend)
    node, cause = found
    return LazyGraphError("execution", node, cause, backend)


def _depending_on(values: list[Value], node: Node) -> set[Value]:
    """Those of ``values`` whose computation reads ``node`` (a walk of their IR, on failure
    only)."""
    reaches: dict[Node, bool] = {node: True}
    found = set()
    for value in values:
        stack = [value.node]
        while stack:
            top = stack[-1]
            if top in reaches:
                stack.pop()
                continue
            operands = [v.node for v in top.inputs()]
            unknown = [n for n in operands if n not in reaches]
            if unknown:
                stack.extend(unknown)
                continue
            stack.pop()
            reaches[top] = any(reaches[n] for n in operands)
        if reaches[value.node]:
            found.add(value)
    return found


def fail(
    device: LazyDevice, tensors: list[LazyTensor], values: list[Value], error: LazyGraphError
) -> None:
    """After ``error``: every tensor whose value depends on the failed node carries the
    error, so reading it raises it and no later step syncs it again: the graph's tensors,
    and other live tensors of the device whose pending IR reads the node (intermediates a
    program still holds). When the backend cannot tell which node failed, the graph's
    tensors carry it. The others keep their IR and sync on their own. Then the error lets
    go of the graph (a held error keeps no IR alive)."""
    carry_error(device, list(zip(tensors, values, strict=True)), error)
    error.release_ir()


def carry_error(device: LazyDevice, synced: list, error: LazyGraphError) -> set[Value]:
    """Point the tensors of ``synced`` (``(tensor, value it had)`` pairs) and the device's
    other live tensors that depend on ``error``'s failed node at the error; returns the
    values of ``synced`` that depend on it."""
    failed = error.failed_node
    if failed is None:
        failing = {value for _, value in synced}
        candidates = synced
    else:
        listed = {id(t) for t, _ in synced}
        others = [(t, t._value) for t in device.live_tensors() if id(t) not in listed]
        candidates = synced + [(t, v) for t, v in others if not v.node.is_input]
        failing = _depending_on([v for _, v in candidates], failed)
    run = FailedRun(error.detached())
    for t, value in candidates:
        if value in failing and t._value is value:
            t._value = Value(DeviceData.failed(run, value.node.shapes[value.index]), 0)
    return failing


def broken_contract(device: LazyDevice, method: str, what: str) -> None:
    """Fail the run: the backend's results break ``execute``'s contract."""
    backend = device.backend
    cause = LazygenRuntimeError(
        f"{type(backend).__name__}.{method} {what}: it must return a list with one tensor "
        "per graph output, in the order set_graph_outputs received them "
        "(docs/backend-guide.md, section 5)"
    )
    raise LazyGraphError("execution", None, cause, backend)
