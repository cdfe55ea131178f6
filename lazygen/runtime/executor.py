"""The graph executor: collect pending IR → post-order → hash → compile (cached) → execute.

Each step is a small function; ``sync`` strings them together under the device's lock.
"""

from __future__ import annotations

import time
import weakref

import torch

from . import metrics, split, state
from .devices import LazyDevice, all_devices, caches
from .errors import LazyGraphError
from .graph import GraphCache, Plan, graph_key, post_order
from .ir import DeviceData, Node, Value
from .launches import Launch, settle
from .state import log, settings
from .tensor import LazyTensor

_step_closures: list = []


# Steps ---------------------------------------------------------------------------------


def pending(tensors) -> list[LazyTensor]:
    """The tensors whose value is still IR."""
    return [t for t in tensors if not t._value.node.is_input]


def compile_cached(device: LazyDevice, key, order: list[Node], outputs: list[Value]):
    cache = device.cache
    executable = cache.get(key)
    if executable is not None:
        metrics.count("CachedCompile")
        return executable
    metrics.count("UncachedCompile")
    backend = device.backend
    start = time.perf_counter()
    try:
        executable = backend.compile(order, outputs, device.backing)
    except LazyGraphError as error:
        raise error.described_by(backend) from error.__cause__
    except Exception as error:
        raise LazyGraphError("compilation", None, error, backend) from error
    metrics.add_time("CompileTime", time.perf_counter() - start)
    log(
        2,
        f"{backend.name} compiled graph {hash(key) & 0xFFFFFFFF:08x}: {len(order)} nodes, "
        f"{len(outputs)} outputs",
    )
    cache.put(key, executable)
    return executable


def trim_compile_caches() -> None:
    """Drop least recently used graphs beyond ``config.set_compile_cache_size``."""
    for cache in caches():
        cache.trim()


def execute(device: LazyDevice, executable, order: list[Node], inputs: list) -> list:
    start = time.perf_counter()
    try:
        results = device.backend.execute(executable, inputs)
    except Exception as error:
        raise _execution_error(device, order, inputs, error) from error
    metrics.add_time("ExecuteTime", time.perf_counter() - start)
    return results


def _execution_error(device, order: list[Node], inputs: list, error) -> LazyGraphError:
    """Name the node that failed (the backend re-runs the graph node by node when it can)."""
    metrics.count("ExecutionError")
    backend = device.backend
    try:
        found = backend.locate_failure(order, inputs)
    except Exception:  # diagnosis is best effort; report the original error
        found = None
    if found is None:
        return LazyGraphError("execution", None, error, backend)
    node, cause = found
    return LazyGraphError("execution", node, cause, backend)


# Entry points --------------------------------------------------------------------------


def sync(tensors, wait: bool = True, early_results: bool = False) -> None:
    """Materialise the given inner lazy tensors (one graph per device). With ``wait`` false
    (``mark_step``), graphs are launched and run while the caller goes on (see launches.py);
    with ``early_results`` too, single-element results first (see split.py)."""
    by_device: dict[LazyDevice, list[LazyTensor]] = {}
    for t in tensors:
        if not t._value.node.is_input:
            by_device.setdefault(t._device, []).append(t)
    for dev, group in by_device.items():
        if early_results and not wait and _splits(dev):
            with dev.lock:
                plan = split.split(list(dict.fromkeys(group)))
                if plan is not None:
                    metrics.count("EarlyResultGraph")
                    data_of = _sync_device(dev, plan.early, False, plan.handed_over)
                    split.hand_over(plan, data_of)
                    group = plan.rest
        _sync_device(dev, group, wait)


def _splits(device: LazyDevice) -> bool:
    """Whether ``mark_step`` launches single-element results in a graph of their own:
    with asynchronous runs only, and never with collectives pending (they run in one
    graph, in trace order, on every process). ``mark_step`` asks only for steps of up to
    ``settings.early_results_max_nodes`` traced nodes: splitting walks the graph, which
    small models, whose steps are mostly the graph's run, win back many times, and far
    larger steps, mostly tracing, do not (measurements in docs/benchmarks.md,
    "Measurements behind the code")."""
    return (
        settings.early_results
        and settings.async_execution
        and device.backend.asynchronous
        and not device.must_run
    )


def run_must_run(device: LazyDevice | None = None) -> None:
    """Run every device's ``must_run`` tensors now (before an eager collective, which must
    come after the traced ones on every process)."""
    for dev in [device] if device is not None else all_devices():
        if dev.must_run:
            _sync_device(dev, [])


def _sync_device(
    device: LazyDevice, tensors: list[LazyTensor], wait: bool = True, extra_outputs=()
) -> dict[Value, Value]:
    """Run the graph of ``tensors`` (and of ``extra_outputs``, values no tensor holds) and
    point the tensors at their data; returns each output value's data value."""
    if device.must_run:
        # Collectives run in trace order: first this device's graphs in flight (which may
        # hold earlier ones; two graphs never issue collectives at once), then the traced
        # ones ahead of everything else in this graph (post-order keeps their order).
        settle(device.in_flight, device.lock)
        with device.lock:
            must_run, device.must_run = device.must_run, []
        tensors = must_run + list(tensors)
    with device.lock:
        # Another thread may have synced some meanwhile; a tensor may be listed twice.
        tensors = list(dict.fromkeys(pending(tensors)))
        if not tensors:
            return {}
        values = [t._value for t in tensors]
        outputs = list(dict.fromkeys(values + list(extra_outputs)))
        cache: GraphCache = device.cache
        plan, order = cache.find_plan(outputs)
        if plan is None:
            metrics.count("GraphWalk")
            order, position = post_order(outputs)
            key = graph_key(order, position, outputs)
            executable = compile_cached(device, key, order, outputs)
            plan = Plan(key, order, position, outputs)
            cache.remember_plan(plan, outputs)
        else:
            key = plan.key
            executable = compile_cached(device, key, order, outputs)
        inputs = [order[i].materialize() for i in plan.inputs]  # waits for runs they come from
        if wait or not settings.async_execution or not device.backend.asynchronous:
            try:
                results = _finish(outputs, execute(device, executable, order, inputs))
            except LazyGraphError:
                cache.forget(key)  # a later, fixed lowering must not reuse it
                raise
            data_of = {
                value: Value(DeviceData(r), 0) for value, r in zip(outputs, results, strict=True)
            }
        else:
            launch = _launch(device, executable, key, order, inputs, outputs, tensors, values)
            data_of = {
                value: Value(launch.output(value.node.shapes[value.index]), 0) for value in outputs
            }
            device.in_flight.append(launch)
        for t, value in zip(tensors, values, strict=True):
            if t._value is value:  # unless another thread re-pointed it meanwhile
                t._value = data_of[value]
        metrics.count("SyncedTensors", len(tensors))
        return data_of


def _finish(outputs: list[Value], results: list[torch.Tensor]) -> list[torch.Tensor]:
    """The results as device data, of the dtype shape inference promised (made contiguous
    only when read: see ``DeviceData.data``)."""
    finished = []
    for value, result in zip(outputs, results, strict=True):
        shape = value.node.shapes[value.index]
        if result.dtype != shape.dtype:  # a lowering disagreeing with shape inference
            metrics.count("OutputDtypeMismatch")
            result = result.to(shape.dtype)
        finished.append(result)
    return finished


def _launch(device, executable, key, order, inputs, outputs, tensors, values) -> Launch:
    """Start the graph and return its ``Launch``; should the run fail, its error is built
    when someone waits, and the tensors synced here get their IR back."""
    refs = [weakref.ref(t) for t in tensors]

    def finish(results: list) -> list[torch.Tensor]:
        return _finish(outputs, results)

    def fail(error: BaseException, nodes: list[DeviceData]) -> BaseException:
        device.cache.forget(key)
        for ref, value in zip(refs, values, strict=True):
            t = ref()
            if t is not None and any(t._value.node is node for node in nodes):
                t._value = value  # the traced IR, to sync again once the cause is fixed
        if isinstance(error, LazyGraphError) or not isinstance(error, Exception):
            return error
        return _execution_error(device, order, inputs, error)

    start = time.perf_counter()
    try:
        handle = device.backend.launch(executable, inputs)
    except Exception as error:
        device.cache.forget(key)
        raise _execution_error(device, order, inputs, error) from error
    metrics.add_time("LaunchTime", time.perf_counter() - start)
    metrics.count("AsyncLaunch")
    return Launch(handle, inputs, finish, fail)


def mark_step(device: LazyDevice | None = None, wait: bool = False) -> None:
    """Materialise every live tensor with pending IR; then run the step closures.

    The graph is launched and runs while the caller traces the next step, unless ``wait``
    (or ``config.set_async_execution(False)``). At most one run per device is in flight
    after it returns: the next ``mark_step`` waits for the previous run once it launched
    its own, so a failed run raises there at the latest."""
    metrics.count("MarkStep")
    for dev in [device] if device is not None else all_devices():
        traced, dev.pending_nodes = dev.pending_nodes, 0
        previous = len(dev.in_flight)
        # The previous run is waited for only once this step's graph is found and its
        # inputs are read (which waits for the runs they come from): the run overlaps
        # that work too, and the worker idles no longer than the launch itself.
        early = traced <= settings.early_results_max_nodes
        sync(dev.live_tensors(), wait, early_results=early)
        settle(dev.in_flight, dev.lock, None if wait else previous)
    run_step_closures()


def wait_device_ops(device: LazyDevice | None = None) -> None:
    """Wait for every graph in flight; raise the first failure."""
    for dev in [device] if device is not None else all_devices():
        settle(dev.in_flight, dev.lock)


def cut(device: LazyDevice) -> None:
    """Materialise a graph that grew too large without ``mark_step`` (no step closures)."""
    metrics.count("AutoGraphCut")
    device.pending_nodes = 0
    previous = len(device.in_flight)
    sync(device.live_tensors(), wait=False)
    settle(device.in_flight, device.lock, previous)


def add_step_closure(fn, args=()) -> None:
    _step_closures.append((fn, tuple(args)))


def run_step_closures() -> None:
    while _step_closures:
        fn, args = _step_closures.pop(0)
        fn(*args)


def clear_compile_cache() -> None:
    for cache in caches():
        cache.clear()


def compile_cache_size() -> int:
    return sum(len(cache) for cache in caches())


def _reset() -> None:
    """Forget step closures not run yet."""
    _step_closures.clear()


state.register("executor", _reset)
