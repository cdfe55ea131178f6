"""Running a compiled graph: read its inputs, run it now or launch it to run in the
background, and hand its results back as device data, holding every backend to the
results contract of ``Backend.execute`` (one tensor per graph output).

Apart from the executor, which decides what runs and when; this module is how.
"""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Callable

import torch

from .. import metrics
from ..devices import LazyDevice
from ..errors import LazyGraphError
from ..graph.uncompiled import NoTorchOverload, UncompiledGraph
from ..ir import DeviceData, Node, ScalarData, Value
from . import profiling
from .failures import broken_contract, carry_error, execution_error
from .launches import Launch

#: ``Value(node, i)`` without the NamedTuple's Python-level ``__new__`` (a third of the cost
#: of a launched graph's output data, hundreds a step).
_new_value = tuple.__new__


def execute(device: LazyDevice, executable, order: list[Node], inputs: list, dead=None) -> list:
    """Run a compiled graph (``order``: its nodes, named by the error if the run fails).
    ``dead``: positions of inputs nothing reads after the run, which a backend that
    ``donates_inputs`` may take over (``liveness.unreferenced_inputs``)."""
    if dead and type(executable) is not UncompiledGraph:
        backend = device.backend
        donating = functools.partial(backend.execute_donating, executable, dead=dead)
        return run(device, donating, order, inputs)
    return run(device, runner(device, executable), order, inputs)


def runner(device: LazyDevice, executable) -> Callable[[list], list]:
    """``run(inputs)`` for an executable run many times (``lazygen.dynamo``'s replay): the
    backend's shortest path (``Backend.runner``), or op by op for an uncompiled graph."""
    if type(executable) is UncompiledGraph:
        return functools.partial(_run_uncompiled, device, executable)
    return device.backend.runner(executable)


def run(device: LazyDevice, run_inputs: Callable[[list], list], order: list[Node], inputs: list):
    """``run_inputs(inputs)`` timed as ``ExecuteTime``; a failure names the node."""
    start = time.perf_counter()
    try:
        with profiling.span("execute", f"{len(order)} nodes"):
            results = run_inputs(inputs)
    except Exception as error:
        raise execution_error(device, order, inputs, error) from error
    metrics.add_time("ExecuteTime", time.perf_counter() - start)
    return results


def _run_uncompiled(device: LazyDevice, graph: UncompiledGraph, inputs: list) -> list:
    """Run a graph op by op; one with an op torch cannot run so is compiled after all
    (uncached, counted as ``UncompiledGraphCompiled``)."""
    try:
        if not device.backend.torch_data:
            return graph.run_on_host(device.backend, inputs)
        return graph.run(inputs)
    except LazyGraphError as error:
        if not isinstance(error.__cause__, NoTorchOverload):
            raise
    metrics.count("UncompiledGraphCompiled")
    executable = device.backend.compile(graph.order, graph.outputs, device.backing)
    return device.backend.execute(executable, inputs)


def as_device_data(device: LazyDevice, outputs: list[Value], results: list, executable) -> dict:
    """Each output value's ``DeviceData`` holding its result (laid out as the backend says
    ``executable``'s results are: ``Backend.output_placements``)."""
    if device.backend.torch_data:
        return {value: Value(DeviceData(r), 0) for value, r in zip(outputs, results, strict=True)}
    backend = device.backend
    placements = output_placements(device, executable, len(outputs))
    return {
        value: Value(DeviceData(r, None, value.node.shapes[value.index], backend, p), 0)
        for value, r, p in zip(outputs, results, placements, strict=True)
    }


def output_placements(device: LazyDevice, executable, count: int) -> tuple:
    """How each of ``executable``'s ``count`` results is laid out over the backend's devices
    (None: replicated; see ``sharding.py``)."""
    placements = None
    if type(executable) is not UncompiledGraph:
        placements = device.backend.output_placements(executable)
    return (None,) * count if placements is None else placements


def read_inputs(order: list[Node], positions, torch_data: bool = True) -> list:
    """The graph's input data. An input whose own graph failed fails this one with the same
    error, the input being the failed node (what depends on it carries the error). For a
    backend whose data is not torch's (``Backend.torch_data``), scalars are their numbers."""
    inputs = []
    for i in positions:
        try:
            node = order[i]
            if not torch_data and isinstance(node, ScalarData):
                inputs.append(node.value)
                continue
            inputs.append(node.materialize())
        except LazyGraphError as error:
            error.failed_node = order[i]
            raise
    return inputs


def finish(device: LazyDevice, outputs: list[Value], results, method: str) -> list[torch.Tensor]:
    """The results as device data, of the dtype shape inference promised (made contiguous
    only when read: see ``DeviceData.data``).

    This is where a backend's ``execute`` (or ``launch``) hands results to the runtime, so
    the contract is held here for every backend: a list with one tensor per graph output.
    A backend breaking it (a newcomer's ``execute`` returning one tensor, or its first
    result only) failed on an unexplained ``zip()``. ``method``: which of the backend's
    methods gave them (``execute``, or ``launch`` and its handle). Sizes are not checked:
    eager's CPU kernels themselves disagree with shape inference for some ops (an
    eval-mode ``native_batch_norm`` returns empty saved statistics its meta kernel sizes
    by channel), and a check per run would cost ~0.4 us per output."""
    if type(results) not in (list, tuple):
        what = f"returned a {type(results).__name__}, not a list, for a graph of {len(outputs)}"
        broken_contract(device, method, f"{what} outputs")
    if len(results) != len(outputs):
        what = f"returned {len(results)} results for a graph of {len(outputs)} outputs"
        broken_contract(device, method, what)
    if not device.backend.torch_data:
        return list(results)  # the backend's own data: its dtypes are its lowerings' concern
    finished = []
    for i, (value, result) in enumerate(zip(outputs, results, strict=True)):
        shape = value.node.shapes[value.index]
        if not isinstance(result, torch.Tensor):
            broken_contract(device, method, f"returned a {type(result).__name__} as result {i}")
        if result.dtype != shape.dtype:  # a lowering disagreeing with shape inference
            metrics.count("OutputDtypeMismatch")
            result = result.to(shape.dtype)
        finished.append(result)
    return finished


def launch(
    device, executable, key, order, inputs, outputs, tensors, values, described=None
) -> Launch:
    """Start the graph and return its ``Launch``; should the run fail, its error is built
    when someone waits: the tensors synced here that depend on the failed node keep the
    failed run's data (reads raise its error), the others get their IR back. ``described``:
    when ``order`` and ``values`` stand in for a graph built only should it fail (a planned
    split's second graph, ``split_plan``), what returns that graph's ``(order, values)``."""
    refs = [weakref.ref(t) for t in tensors]

    def graph() -> tuple[list[Node], list[Value]]:
        return (order, values) if described is None else described()

    def finish_run(results: list) -> list[torch.Tensor]:
        return finish(device, outputs, results, "launch")

    def fail_run(error: BaseException, nodes: list[DeviceData]) -> BaseException:
        device.cache.forget(key)
        failed_order, failed_values = graph()
        if isinstance(error, Exception) and not isinstance(error, LazyGraphError):
            error = execution_error(device, failed_order, inputs, error)
        if not isinstance(error, LazyGraphError):
            return error  # KeyboardInterrupt and the like: nothing to carry
        outputs_of_run = {id(n) for n in nodes}
        synced = []
        for ref, value in zip(refs, failed_values, strict=True):
            t = ref()
            if t is not None and id(t._value.node) in outputs_of_run:
                t._value = value  # its traced IR, until we know whether it depends on it
                synced.append((t, value))
        carry_error(device, synced, error)  # the rest keep their IR, to sync on their own
        error.release_ir()
        return error

    start = time.perf_counter()
    try:
        with profiling.span("launch", profiling.graph_name(key, len(order))):
            handle = device.backend.launch(executable, inputs)
    except Exception as error:
        device.cache.forget(key)
        raise execution_error(device, graph()[0], inputs, error) from error
    metrics.add_time("LaunchTime", time.perf_counter() - start)
    metrics.count("AsyncLaunch")
    return Launch(handle, inputs, finish_run, fail_run)


def pending_outputs(device: LazyDevice, launch: Launch, outputs: list[Value], executable) -> dict:
    """Each output value's data: the launch's pending output (the launch, now in flight, is
    appended to the device's runs)."""
    native = None if device.backend.torch_data else device.backend
    placements = output_placements(device, executable, len(outputs))
    nodes = launch.outputs(
        [value.node.shapes[value.index] for value in outputs], native, placements
    )
    data_of = dict(zip(outputs, [_new_value(Value, (node, 0)) for node in nodes], strict=True))
    device.in_flight.append(launch)
    return data_of


def point(tensors: list, values: list[Value], data_of: dict) -> None:
    """Point each synced tensor at its value's data (unless another thread re-pointed it
    meanwhile)."""
    for t, value in zip(tensors, values, strict=True):
        if t._value is value:
            t._value = data_of[value]
    metrics.count("SyncedTensors", len(tensors))
