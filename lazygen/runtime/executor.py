"""The graph executor: collect pending IR → post-order → hash → compile (cached) → execute.

Each step is a small function; ``sync`` strings them together under the device's lock.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict

import torch

from . import metrics
from .config import log, settings
from .errors import LazyGraphError
from .ir import DeviceData, Node, Value
from .launches import Launch, settle
from .tensor import LazyDevice, LazyTensor

_compile_cache: OrderedDict = OrderedDict()
_step_closures: list = []
_backend = None


def backend():
    global _backend
    if _backend is None:
        from .ts_backend.backend import TSBackend

        _backend = TSBackend()
    return _backend


def set_backend(new_backend) -> None:
    global _backend
    _backend = new_backend
    clear_compile_cache()


# Steps ---------------------------------------------------------------------------------


def pending(tensors) -> list[LazyTensor]:
    """The tensors whose value is still IR."""
    return [t for t in tensors if not t._value.node.is_input]


def post_order(roots: list[Value]) -> tuple[list[Node], dict[Node, int]]:
    """Nodes reachable from ``roots``, operands first; and each node's position."""
    order: list[Node] = []
    position: dict[Node, int] = {}
    stack: list[tuple[Node, bool]] = [(v.node, False) for v in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if node in position:
            continue
        if expanded:
            position[node] = len(order)
            order.append(node)
            continue
        stack.append((node, True))
        for value in reversed(node.inputs()):
            if value.node not in position:
                stack.append((value.node, False))
    return order, position


def _operand_key(operand, position):
    if type(operand) is Value:
        return (position[operand.node], operand.index)
    if operand is None:
        return None
    return tuple(_operand_key(o, position) for o in operand)


class GraphKey:
    """A graph's structure as a tuple, with its hash computed once: a step that replays a
    plan looks its executable up without rehashing (or re-comparing) the whole graph."""

    __slots__ = ("entries", "_hash")

    def __init__(self, entries: tuple) -> None:
        self.entries = entries
        self._hash = hash(entries)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if type(other) is not GraphKey:
            return NotImplemented
        return self._hash == other._hash and self.entries == other.entries

    def __repr__(self) -> str:
        return f"GraphKey({self._hash & 0xFFFFFFFF:08x})"


def graph_key(order: list[Node], position: dict[Node, int], outputs: list[Value]) -> GraphKey:
    """Structure, attributes, shapes and dtypes of the graph; never data values."""
    entries = tuple(
        (type(n), n.attrs, n.shapes, tuple(_operand_key(o, position) for o in n.operands))
        for n in order
    )
    return GraphKey((entries, tuple((position[v.node], v.index) for v in outputs)))


# Plans: a graph's post-order and inputs, replayed on the next step of the same structure --


class Plan:
    """What ``post_order`` + ``graph_key`` found for one graph, per post-order position:
    node class, attrs, shapes and operand references ``(position, index)`` (``None`` for an
    absent optional, a list of them for a list operand). ``replay`` matches a new step's
    graph against it top-down, checking everything the key holds and that distinct
    positions hold distinct nodes (so aliasing of inputs is part of the match), and yields
    the new post-order without walking, hashing or comparing keys."""

    __slots__ = ("key", "types", "attrs", "shapes", "refs", "outputs", "inputs", "size")

    def __init__(self, key: GraphKey, order: list[Node], position: dict, outputs) -> None:
        self.key = key
        self.size = len(order)
        self.types = [type(n) for n in order]
        self.attrs = [n.attrs for n in order]
        self.shapes = [n.shapes for n in order]
        self.refs = [[_ref(o, position) for o in n.operands] for n in order]
        self.outputs = [(position[v.node], v.index) for v in outputs]
        self.inputs = [i for i, n in enumerate(order) if n.is_input]


def _ref(operand, position):
    if type(operand) is Value:
        return (position[operand.node], operand.index)
    if operand is None:
        return None
    return [None if o is None else (position[o.node], o.index) for o in operand]


def replay(plan: Plan, outputs: list[Value]) -> list[Node] | None:
    """The post-order of ``outputs``' graph if it has ``plan``'s structure, else None.

    Each value is claimed for its plan slot: it fails when another node already holds the
    slot or this node already holds another one. The common case, an operand that is one
    ``Value``, is claimed inline (this loop runs for every node of every step)."""
    slots: list = [None] * plan.size
    seen: dict = {}

    def claim(value: Value, ref: tuple[int, int]) -> bool:
        p, index = ref
        if value.index != index:
            return False
        node = value.node
        q = seen.get(node)
        if q is None:
            if slots[p] is not None:
                return False
            slots[p] = node
            seen[node] = p
            return True
        return q == p

    for value, ref in zip(outputs, plan.outputs, strict=True):
        if not claim(value, ref):
            return None
    types, attrs, shapes, refs = plan.types, plan.attrs, plan.shapes, plan.refs
    for i in range(plan.size - 1, -1, -1):
        node = slots[i]
        if (
            node is None
            or type(node) is not types[i]
            or node.shapes != shapes[i]
            or node.attrs != attrs[i]
        ):
            return None
        node_refs = refs[i]
        if not node_refs:
            continue
        operands = node.operands
        if len(operands) != len(node_refs):
            return None
        for operand, ref in zip(operands, node_refs, strict=False):  # lengths checked above
            if type(operand) is Value:
                if type(ref) is not tuple or operand[1] != ref[1]:
                    return None
                operand_node = operand[0]
                q = seen.get(operand_node)
                if q is None:
                    p = ref[0]
                    if slots[p] is not None:
                        return None
                    slots[p] = operand_node
                    seen[operand_node] = p
                elif q != ref[0]:
                    return None
            elif operand is None:
                if ref is not None:
                    return None
            else:
                if type(ref) is not list or len(ref) != len(operand):
                    return None
                for value, r in zip(operand, ref, strict=True):
                    if value is None or r is None:
                        if value is not r:
                            return None
                    elif not claim(value, r):
                        return None
    return slots


_plans: dict = {}  # output signature -> [Plan], most recently used first
_PLANS_PER_SIGNATURE = 4


def _signature(outputs: list[Value]) -> tuple:
    return tuple([(type(v.node), v.index) for v in outputs])


def find_plan(outputs: list[Value]) -> tuple[Plan | None, list[Node] | None]:
    candidates = _plans.get(_signature(outputs))
    if candidates:
        for i, plan in enumerate(candidates):
            if plan.key not in _compile_cache:  # evicted: its graph is compiled no more
                continue
            order = replay(plan, outputs)
            if order is not None:
                if i:
                    candidates.insert(0, candidates.pop(i))
                return plan, order
    return None, None


def remember_plan(plan: Plan, outputs: list[Value]) -> None:
    candidates = _plans.setdefault(_signature(outputs), [])
    candidates[:] = [p for p in candidates if p.key in _compile_cache and p.key != plan.key]
    candidates.insert(0, plan)
    del candidates[_PLANS_PER_SIGNATURE:]
    if len(_plans) > 2 * settings.compile_cache_size + 16:  # signatures of evicted graphs
        for signature in [s for s, ps in _plans.items() if ps is not candidates]:
            _plans[signature] = [p for p in _plans[signature] if p.key in _compile_cache]
            if not _plans[signature]:
                del _plans[signature]


def compile_cached(key, order: list[Node], outputs: list[Value]):
    executable = _compile_cache.get(key)
    if executable is not None:
        _compile_cache.move_to_end(key)
        metrics.count("CachedCompile")
        return executable
    metrics.count("UncachedCompile")
    start = time.perf_counter()
    try:
        executable = backend().compile(order, outputs)
    except LazyGraphError:
        raise
    except Exception as error:
        raise LazyGraphError("compilation", None, error) from error
    metrics.add_time("CompileTime", time.perf_counter() - start)
    log(
        2,
        f"compiled graph {hash(key) & 0xFFFFFFFF:08x}: {len(order)} nodes, {len(outputs)} outputs",
    )
    _compile_cache[key] = executable
    trim_compile_cache()
    return executable


def trim_compile_cache() -> None:
    """Drop least recently used graphs beyond ``config.set_compile_cache_size``."""
    while len(_compile_cache) > settings.compile_cache_size:
        _compile_cache.popitem(last=False)


def execute(executable, order: list[Node], inputs: list) -> list[torch.Tensor]:
    start = time.perf_counter()
    try:
        results = backend().execute(executable, inputs)
    except Exception as error:
        raise _execution_error(order, inputs, error) from error
    metrics.add_time("ExecuteTime", time.perf_counter() - start)
    return results


def _execution_error(order: list[Node], inputs: list, error: Exception) -> LazyGraphError:
    """Name the node that failed (the backend re-runs the graph node by node when it can)."""
    metrics.count("ExecutionError")
    locate = getattr(backend(), "locate_failure", None)
    found = None
    if locate is not None:
        try:
            found = locate(order, inputs)
        except Exception:  # diagnosis is best effort; report the original error
            found = None
    if found is None:
        return LazyGraphError("execution", None, error)
    node, cause = found
    return LazyGraphError("execution", node, cause)


# Entry points --------------------------------------------------------------------------


def sync(tensors, wait: bool = True) -> None:
    """Materialise the given inner lazy tensors (one graph per device). With ``wait`` false
    (``mark_step``), graphs are launched and run while the caller goes on (see launches.py)."""
    by_device: dict[LazyDevice, list[LazyTensor]] = {}
    for t in tensors:
        if not t._value.node.is_input:
            by_device.setdefault(t._device, []).append(t)
    for dev, group in by_device.items():
        _sync_device(dev, group, wait)


def _sync_device(device: LazyDevice, tensors: list[LazyTensor], wait: bool = True) -> None:
    with device.lock:
        # Another thread may have synced some meanwhile; a tensor may be listed twice.
        tensors = list(dict.fromkeys(pending(tensors)))
        if not tensors:
            return
        values = [t._value for t in tensors]
        outputs = list(dict.fromkeys(values))
        plan, order = find_plan(outputs)
        if plan is None:
            metrics.count("GraphWalk")
            order, position = post_order(outputs)
            key = graph_key(order, position, outputs)
            executable = compile_cached(key, order, outputs)
            plan = Plan(key, order, position, outputs)
            remember_plan(plan, outputs)
        else:
            key = plan.key
            executable = compile_cached(key, order, outputs)
        inputs = [order[i].materialize() for i in plan.inputs]  # waits for runs they come from
        launcher = None if wait or not settings.async_execution else _launcher()
        if launcher is None:
            try:
                results = _finish(outputs, execute(executable, order, inputs))
            except LazyGraphError:
                _compile_cache.pop(key, None)  # a later, fixed lowering must not reuse it
                raise
            data_of = {
                value: Value(DeviceData(r), 0) for value, r in zip(outputs, results, strict=True)
            }
        else:
            launch = _launch(launcher, executable, key, order, inputs, outputs, tensors, values)
            data_of = {
                value: Value(launch.output(value.node.shapes[value.index]), 0) for value in outputs
            }
            device.in_flight.append(launch)
        for t, value in zip(tensors, values, strict=True):
            if t._value is value:  # unless another thread re-pointed it meanwhile
                t._value = data_of[value]
        metrics.count("SyncedTensors", len(tensors))


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


def _launcher():
    """The backend's asynchronous entry point, if it has one."""
    return getattr(backend(), "launch", None)


def _launch(launcher, executable, key, order, inputs, outputs, tensors, values) -> Launch:
    """Start the graph and return its ``Launch``; should the run fail, its error is built
    when someone waits, and the tensors synced here get their IR back."""
    refs = [weakref.ref(t) for t in tensors]

    def finish(results: list) -> list[torch.Tensor]:
        return _finish(outputs, results)

    def fail(error: BaseException, nodes: list[DeviceData]) -> BaseException:
        _compile_cache.pop(key, None)
        for ref, value in zip(refs, values, strict=True):
            t = ref()
            if t is not None and any(t._value.node is node for node in nodes):
                t._value = value  # the traced IR, to sync again once the cause is fixed
        if isinstance(error, LazyGraphError) or not isinstance(error, Exception):
            return error
        return _execution_error(order, inputs, error)

    start = time.perf_counter()
    try:
        handle = launcher(executable, inputs)
    except Exception as error:
        _compile_cache.pop(key, None)
        raise _execution_error(order, inputs, error) from error
    metrics.add_time("LaunchTime", time.perf_counter() - start)
    metrics.count("AsyncLaunch")
    return Launch(handle, inputs, finish, fail)


def mark_step(device: LazyDevice | None = None, wait: bool = False) -> None:
    """Materialise every live tensor with pending IR; then run the step closures.

    The graph is launched and runs while the caller traces the next step, unless ``wait``
    (or ``config.set_async_execution(False)``). At most one run per device is in flight
    after it returns: the next ``mark_step`` waits for the previous run once it launched
    its own, so a failed run raises there at the latest."""
    from .devices import all_devices

    metrics.count("MarkStep")
    for dev in [device] if device is not None else all_devices():
        dev.pending_nodes = 0
        previous = len(dev.in_flight)
        # The previous run is waited for only once this step's graph is found and its
        # inputs are read (which waits for the runs they come from): the run overlaps
        # that work too, and the worker idles no longer than the launch itself.
        sync(dev.live_tensors(), wait)
        settle(dev.in_flight, dev.lock, None if wait else previous)
    run_step_closures()


def wait_device_ops(device: LazyDevice | None = None) -> None:
    """Wait for every graph in flight; raise the first failure."""
    from .devices import all_devices

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
    _compile_cache.clear()
    _plans.clear()


def compile_cache_size() -> int:
    return len(_compile_cache)
