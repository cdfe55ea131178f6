"""The graph executor: collect pending IR → post-order → hash → compile (cached) → execute.

Each step is a small function; ``sync`` strings them together under the device's lock.
"""

from __future__ import annotations

import contextlib
import functools
import time
import warnings
import weakref
from collections.abc import Callable

import torch

from .. import debug, metrics, state
from ..devices import LazyDevice, all_devices, caches
from ..errors import GraphCutWarning, LazygenRuntimeError, LazyGraphError
from ..graph import GraphCache, Plan, budget, dynamic, graph_key, post_order, recompiles, split
from ..graph.eager import EagerGraph, NoEagerOp
from ..ir import DeviceData, InputWrite, Node, ScalarData, Value
from ..state import log, settings
from ..tracing import reuse_trie
from ..tracing.tensor import LazyTensor
from . import profiling, step_closures
from .launches import FailedRun, Launch, settle
from .liveness import unreferenced_inputs

# Steps ---------------------------------------------------------------------------------


def pending(tensors) -> list[LazyTensor]:
    """The tensors whose value is still IR."""
    return [t for t in tensors if not t._value.node.is_input]


def compile_cached(device: LazyDevice, key, order: list[Node], outputs: list[Value]):
    """The executable of ``key``'s graph: cached, or one serving every size of it
    (``graph/dynamic.py``), or compiled now, or, past the structure's recompile budget, an
    ``EagerGraph`` that runs it uncompiled (``graph/budget.py``)."""
    cache = device.cache
    executable = cache.get(key)
    if executable is not None:
        metrics.count("CachedCompile")
        return executable
    backend = device.backend
    generic = None
    if backend.size_generic and (settings.dynamic_shapes or dynamic.reads_marked(order)):
        generic = dynamic.generic_key(key)
        executable = cache.get(generic)
        if executable is not None:  # compiled for all sizes: this one too
            metrics.count("CachedCompile")
            metrics.count("DynamicShapeReuse")
            cache.put(key, executable)
            return executable
    record = budget.structure(cache.structures, order, outputs)
    sizes_key = dynamic.generic_key(key, constants=False)
    if record.exhausted():
        # Sizes changed (or, with dynamic shapes on, may have): one compile for all sizes.
        sizes_only = sizes_key in record.size_keys or generic is not None
        forcing = backend.size_generic and sizes_only and not record.extra_spent
        budget.warn_once(record, backend.name, forcing)
        if forcing and not settings.dynamic_shapes:
            settings.dynamic_shapes = True  # the next traced steps have sizes as inputs
        # The one compile left is for a graph traced with sizes as inputs (not one traced
        # before they were: its size constants would be compiled in).
        sizes_are_inputs = generic is not None and not any(n.is_constant for n in order)
        if not (forcing and sizes_are_inputs):
            metrics.count("EagerGraphRun")
            _explain(cache, key, order, "past the recompile limit: run uncompiled, op by op")
            return EagerGraph(order, outputs, device.backing)
        record.extra_spent = True
        for_all_sizes = True
    else:
        for_all_sizes = generic is not None and (
            generic in record.static_generic_keys or dynamic.reads_marked(order)
        )
    _explain(cache, key, order, "compiled once for all sizes" if for_all_sizes else None)
    metrics.count("UncachedCompile")
    record.compiles += 1
    record.size_keys.add(sizes_key)
    executable = None
    if for_all_sizes:
        executable = _compile_for_all_sizes(device, order, outputs)
    if executable is None:
        executable = _compile(device, key, order, outputs)
        if generic is not None:
            record.static_generic_keys.add(generic)
    else:
        cache.put(generic, executable)
    cache.put(key, executable)
    return executable


def _explain(cache: GraphCache, key, order: list[Node], outcome: str | None) -> None:
    if settings.explain_recompiles:
        recompiles.report(list(cache.executables), key, order, outcome)


def _compile(device: LazyDevice, key, order: list[Node], outputs: list[Value]):
    backend = device.backend
    start = time.perf_counter()
    try:
        with profiling.span("compile", f"{backend.name}, {profiling.graph_name(key, len(order))}"):
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
    return executable


def _compile_for_all_sizes(device: LazyDevice, order: list[Node], outputs: list[Value]):
    """The graph compiled from a copy whose sizes are hidden, or None when a lowering reads
    a size (or anything else fails: the graph is then compiled for its own sizes, whose
    errors are the ones to report)."""
    backend = device.backend
    start = time.perf_counter()
    hidden_order, hidden_outputs = dynamic.hidden_sizes(order, outputs)
    try:
        with profiling.span("compile", f"{backend.name}, all sizes, {len(order)} nodes"):
            executable = backend.compile(hidden_order, hidden_outputs, device.backing)
    except Exception as error:
        metrics.count("DynamicCompileFallback")
        why = "a lowering reads a size" if dynamic.hid_a_size(error) else repr(error)[:200]
        log(1, f"{backend.name}: graph compiled for its own sizes only ({why})")
        return None
    metrics.count("DynamicCompile")
    metrics.add_time("CompileTime", time.perf_counter() - start)
    log(2, f"{backend.name} compiled a graph for all sizes: {len(order)} nodes")
    return executable


def trim_compile_caches() -> None:
    """Drop least recently used graphs beyond ``config.set_compile_cache_size``."""
    for cache in caches():
        cache.trim()


def execute(device: LazyDevice, executable, order: list[Node], inputs: list, dead=None) -> list:
    """Run a compiled graph (``order``: its nodes, named by the error if the run fails).
    ``dead``: positions of inputs nothing reads after the run, which a backend that
    ``donates_inputs`` may take over (``liveness.unreferenced_inputs``)."""
    if dead and type(executable) is not EagerGraph:
        backend = device.backend
        return run(
            device,
            functools.partial(backend.execute_donating, executable, dead=dead),
            order,
            inputs,
        )
    return run(device, runner(device, executable), order, inputs)


def runner(device: LazyDevice, executable) -> Callable[[list], list]:
    """``run(inputs)`` for an executable run many times (``lazygen.dynamo``'s replay): the
    backend's shortest path (``Backend.runner``), or op by op for an uncompiled graph."""
    if type(executable) is EagerGraph:
        return functools.partial(_run_uncompiled, device, executable)
    return device.backend.runner(executable)


def run(device: LazyDevice, run_inputs: Callable[[list], list], order: list[Node], inputs: list):
    """``run_inputs(inputs)`` timed as ``ExecuteTime``; a failure names the node."""
    start = time.perf_counter()
    try:
        with profiling.span("execute", f"{len(order)} nodes"):
            results = run_inputs(inputs)
    except Exception as error:
        raise _execution_error(device, order, inputs, error) from error
    metrics.add_time("ExecuteTime", time.perf_counter() - start)
    return results


def _run_uncompiled(device: LazyDevice, graph: EagerGraph, inputs: list) -> list:
    """Run a graph op by op; one with an op torch cannot run so is compiled after all
    (uncached, counted as ``EagerGraphCompiled``)."""
    try:
        if not device.backend.torch_data:
            return graph.run_on_host(device.backend, inputs)
        return graph.run(inputs)
    except LazyGraphError as error:
        if not isinstance(error.__cause__, NoEagerOp):
            raise
    metrics.count("EagerGraphCompiled")
    executable = device.backend.compile(graph.order, graph.outputs, device.backing)
    return device.backend.execute(executable, inputs)


def _execution_error(device, order: list[Node], inputs: list, error) -> LazyGraphError:
    """Name the node that failed (the backend re-runs the graph node by node when it can)."""
    metrics.count("ExecutionError")
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


# Entry points --------------------------------------------------------------------------


def sync(tensors, wait: bool = True, early_results: bool = False) -> None:
    """Materialise the given inner lazy tensors (one graph per device). With ``wait`` false
    (``mark_step``), graphs are launched and run while the caller goes on (see launches.py);
    with ``early_results`` too, single-element results first (see graph/split.py)."""
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
                    try:
                        data_of = _sync_device(dev, plan.early, False, plan.handed_over)
                    except LazyGraphError:
                        # The rest runs as a graph of its own now: what depends on the
                        # failure carries the error, the rest is materialised.
                        _sync_rest_quietly(dev, plan.rest)
                        raise
                    split.hand_over(plan, data_of)
                    group = plan.rest
        _sync_device(dev, group, wait)


def _sync_rest_quietly(device: LazyDevice, tensors: list[LazyTensor]) -> None:
    """Sync ``tensors`` after another graph of the same sync failed (whose error is the one
    raised): a failure of theirs is carried by the tensors it concerns."""
    with contextlib.suppress(LazyGraphError):
        _sync_device(device, tensors, wait=True)


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
        try:
            plan, order = cache.find_plan(outputs)
            if plan is None:
                metrics.count("GraphWalk")
                order, position = post_order(outputs)
                key = graph_key(order, position, outputs)
                plan = Plan(key, order, position, outputs)
                del position  # holds every node: no input would look unreferenced (liveness)
                executable = compile_cached(device, key, order, outputs)
                cache.remember_plan(plan, outputs)
            else:
                key = plan.key
                executable = compile_cached(device, key, order, outputs)
            debug.note_sync(device, executable, order, outputs)
            # waits for runs they come from
            inputs = _read_inputs(order, plan.inputs, device.backend.torch_data)
            dead = None
            if device.backend.donates_inputs and _all_pending_synced(device, tensors):
                dead = unreferenced_inputs(order, plan.inputs)
        except LazyGraphError as error:
            _fail(device, tensors, values, error)
            raise
        if (
            wait
            or not settings.async_execution
            or not device.backend.asynchronous
            or type(executable) is EagerGraph
        ):
            try:
                ran = execute(device, executable, order, inputs, dead)
                results = _finish(device, outputs, ran, "execute")
            except LazyGraphError as error:
                cache.forget(key)  # a later, fixed lowering must not reuse it
                _fail(device, tensors, values, error)
                raise
            data_of = _as_device_data(device, outputs, results)
        else:
            launch = _launch(device, executable, key, order, inputs, outputs, tensors, values)
            native = None if device.backend.torch_data else device.backend
            data_of = {
                value: Value(launch.output(value.node.shapes[value.index], native), 0)
                for value in outputs
            }
            device.in_flight.append(launch)
        for t, value in zip(tensors, values, strict=True):
            if t._value is value:  # unless another thread re-pointed it meanwhile
                t._value = data_of[value]
        metrics.count("SyncedTensors", len(tensors))
        return data_of


def _all_pending_synced(device: LazyDevice, tensors: list[LazyTensor]) -> bool:
    """Whether every pending tensor of ``device`` is in this graph (``mark_step``): only then
    does no node outside it read its inner nodes, which a later graph would recompute from
    its inputs (the condition of ``liveness.unreferenced_inputs``)."""
    synced = {id(t) for t in tensors}
    return all(t._value.node.is_input or id(t) in synced for t in device.live_tensors())


def _as_device_data(device: LazyDevice, outputs: list[Value], results: list) -> dict:
    """Each output value's ``DeviceData`` holding its result."""
    if device.backend.torch_data:
        return {value: Value(DeviceData(r), 0) for value, r in zip(outputs, results, strict=True)}
    backend = device.backend
    return {
        value: Value(DeviceData(r, None, value.node.shapes[value.index], backend), 0)
        for value, r in zip(outputs, results, strict=True)
    }


def _read_inputs(order: list[Node], positions, torch_data: bool = True) -> list:
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


def _fail(
    device: LazyDevice, tensors: list[LazyTensor], values: list[Value], error: LazyGraphError
) -> None:
    """After ``error``: every tensor whose value depends on the failed node carries the
    error, so reading it raises it and no later step syncs it again: the graph's tensors,
    and other live tensors of the device whose pending IR reads the node (intermediates a
    program still holds). When the backend cannot tell which node failed, the graph's
    tensors carry it. The others keep their IR and sync on their own. Then the error lets
    go of the graph (a held error keeps no IR alive)."""
    _carry_error(device, list(zip(tensors, values, strict=True)), error)
    error.release_ir()


def _carry_error(device: LazyDevice, synced: list, error: LazyGraphError) -> set[Value]:
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


def _finish(device: LazyDevice, outputs: list[Value], results, method: str) -> list[torch.Tensor]:
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
        _broken_contract(device, method, f"{what} outputs")
    if len(results) != len(outputs):
        what = f"returned {len(results)} results for a graph of {len(outputs)} outputs"
        _broken_contract(device, method, what)
    if not device.backend.torch_data:
        return list(results)  # the backend's own data: its dtypes are its lowerings' concern
    finished = []
    for i, (value, result) in enumerate(zip(outputs, results, strict=True)):
        shape = value.node.shapes[value.index]
        if not isinstance(result, torch.Tensor):
            _broken_contract(device, method, f"returned a {type(result).__name__} as result {i}")
        if result.dtype != shape.dtype:  # a lowering disagreeing with shape inference
            metrics.count("OutputDtypeMismatch")
            result = result.to(shape.dtype)
        finished.append(result)
    return finished


def _broken_contract(device: LazyDevice, method: str, what: str) -> None:
    """Fail the run: the backend's results break ``execute``'s contract."""
    backend = device.backend
    cause = LazygenRuntimeError(
        f"{type(backend).__name__}.{method} {what}: it must return a list with one tensor "
        "per graph output, in the order set_graph_outputs received them "
        "(docs/backend-guide.md, section 5)"
    )
    raise LazyGraphError("execution", None, cause, backend)


def _launch(device, executable, key, order, inputs, outputs, tensors, values) -> Launch:
    """Start the graph and return its ``Launch``; should the run fail, its error is built
    when someone waits: the tensors synced here that depend on the failed node keep the
    failed run's data (reads raise its error), the others get their IR back."""
    refs = [weakref.ref(t) for t in tensors]

    def finish(results: list) -> list[torch.Tensor]:
        return _finish(device, outputs, results, "launch")

    def fail(error: BaseException, nodes: list[DeviceData]) -> BaseException:
        device.cache.forget(key)
        if isinstance(error, Exception) and not isinstance(error, LazyGraphError):
            error = _execution_error(device, order, inputs, error)
        if not isinstance(error, LazyGraphError):
            return error  # KeyboardInterrupt and the like: nothing to carry
        outputs_of_run = {id(n) for n in nodes}
        synced = []
        for ref, value in zip(refs, values, strict=True):
            t = ref()
            if t is not None and id(t._value.node) in outputs_of_run:
                t._value = value  # its traced IR, until we know whether it depends on it
                synced.append((t, value))
        _carry_error(device, synced, error)  # the rest keep their IR, to sync on their own
        error.release_ir()
        return error

    start = time.perf_counter()
    try:
        with profiling.span("launch", profiling.graph_name(key, len(order))):
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
    synced = [device] if device is not None else all_devices()
    for dev in synced:
        traced, dev.pending_nodes = dev.pending_nodes, 0
        previous = len(dev.in_flight)
        # The previous run is waited for only once this step's graph is found and its
        # inputs are read (which waits for the runs they come from): the run overlaps
        # that work too, and the worker idles no longer than the launch itself.
        early = traced <= settings.early_results_max_nodes
        sync(dev.live_tensors(), wait, early_results=early)
        settle(dev.in_flight, dev.lock, None if wait else previous)
    if len(synced) == len(all_devices()):
        reuse_trie.end_step()  # every lazy tensor is materialised: the next step may reuse
    else:
        reuse_trie.reset()  # another device's tensors may still read this step's nodes
    _warn_about_graph_cuts(metrics.take_step_cuts())
    step_closures.run([launch for dev in synced for launch in list(dev.in_flight)])


_cuts_warned: list[bool] = []  # the graph-cut warning is given once per process


def _warn_about_graph_cuts(cuts: dict[str, int]) -> None:
    """Once: say which ops without a lazy kernel cut the step that just ended."""
    if not cuts or _cuts_warned:
        return
    _cuts_warned.append(True)
    named = ", ".join(
        f"{op} ({n}x)" for op, n in sorted(cuts.items(), key=lambda item: (-item[1], item[0]))[:8]
    )
    warnings.warn(
        f"lazygen: ops without a lazy kernel cut this step into {sum(cuts.values()) + 1} "
        f"graphs instead of one: {named}. Each read tensors with pending IR, so the graph "
        "traced so far had to run first. Add them to the op list (or give them a kernel); "
        "lazygen.runtime.metrics.fallback_report() lists every op that ran eagerly and "
        "where. (Warned once per process.)",
        GraphCutWarning,
        stacklevel=4,  # the user's ``lr.mark_step()``
    )


def wait_device_ops(device: LazyDevice | None = None) -> None:
    """Wait for every graph in flight, then for the asynchronous step closures; raise the
    first failure."""
    for dev in [device] if device is not None else all_devices():
        settle(dev.in_flight, dev.lock)
    step_closures.wait()


def cut(device: LazyDevice) -> None:
    """Materialise a graph that grew too large without ``mark_step`` (no step closures)."""
    metrics.count("AutoGraphCut")
    device.pending_nodes = 0
    previous = len(device.in_flight)
    sync(device.live_tensors(), wait=False)
    settle(device.in_flight, device.lock, previous)


def clear_compile_cache() -> None:
    for cache in caches():
        cache.clear()


def compile_cache_size() -> int:
    return sum(len(cache) for cache in caches())


def _reset() -> None:
    """Warn about graph cuts again."""
    _cuts_warned.clear()


state.register("executor", _reset)
