"""The graph executor: collect pending IR → post-order → hash → compile (cached) → execute.

Each step is a small function; ``sync`` strings them together under the device's lock.
The executor is mechanism: which executable a graph gets is the graph layer's decision
(``graph/policy.py``), carried out by ``compiling``; how a graph runs and hands back its
results is ``running``; what a failed graph leaves in its tensors is ``failures``.
"""

from __future__ import annotations

import contextlib
import warnings

import torch.distributed as dist

from .. import debug, metrics, state
from ..devices import LazyDevice, all_devices
from ..errors import GraphCutWarning, LazyGraphError
from ..graph import GraphCache, GraphTemplate, graph_key, post_order
from ..graph.uncompiled import UncompiledGraph
from ..ir import Node, Value
from ..state import settings
from ..tracing import ir_reuse
from ..tracing.tensor import LazyTensor
from . import failures, running, split, split_plan, step_closures, step_plan
from .compiling import (
    clear_compile_cache,
    compile_cache_size,
    compile_cached,
    trim_compile_caches,
)
from .launches import settle
from .liveness import input_reads, unreferenced_inputs
from .running import execute, run, runner

#: What other modules reach through the executor (``lr.executor``): its entry points, and
#: the compile cache and run functions of ``compiling`` and ``running``.
__all__ = [
    "clear_compile_cache",
    "compile_cache_size",
    "compile_cached",
    "cut",
    "execute",
    "mark_step",
    "pending",
    "run",
    "run_must_run",
    "runner",
    "sync",
    "trim_compile_caches",
    "wait_device_ops",
]

# Steps ---------------------------------------------------------------------------------


def pending(tensors) -> list[LazyTensor]:
    """The tensors whose value is still IR."""
    return [t for t in tensors if not t._value.node.is_input]


# Entry points --------------------------------------------------------------------------


def sync(tensors, wait: bool = True, early_results: bool = False) -> None:
    """Materialise the given inner lazy tensors (one graph per device). With ``wait`` false
    (``mark_step``), graphs are launched and run while the caller goes on (see launches.py);
    with ``early_results`` too, single-element results first (see execution/split.py)."""
    by_device: dict[LazyDevice, list[LazyTensor]] = {}
    for t in tensors:
        if not t._value.node.is_input:
            by_device.setdefault(t._device, []).append(t)
        elif t._device.spliced:  # a read on a device with a step pending: the step runs
            by_device.setdefault(t._device, [])
    for dev, group in by_device.items():
        whole_step = _starts_whole_step(dev)
        if early_results and not wait and _splits(dev):
            with dev.lock:
                if whole_step:
                    group = pending(dev.live_tensors())
                group = list(dict.fromkeys(group))
                if not whole_step and split_plan.sync(dev, group, _sync_device, _sync_rest_quietly):
                    continue
                values = [t._value for t in group]
                plan = split.split(group)
                if plan is not None:
                    metrics.count("EarlyResultGraph")
                    graphs: list[tuple] = []  # each graph's template, order, executable, outputs
                    try:
                        data_of = _sync_device(
                            dev, plan.early, False, plan.handed_over, found=graphs
                        )
                    except LazyGraphError:
                        # The rest runs as a graph of its own now: what depends on the
                        # failure carries the error, the rest is materialised.
                        _sync_rest_quietly(dev, plan.rest)
                        raise
                    rebuilt = split.hand_over(plan, data_of)
                    if not whole_step:
                        _sync_device(dev, plan.rest, wait, found=graphs)
                        split_plan.remember(dev, group, values, plan, graphs, data_of, rebuilt)
                        continue
                    group = plan.rest
        _sync_device(dev, group, wait, whole_step=whole_step)


def sync_apart(device: LazyDevice, tensors: list[LazyTensor]) -> None:
    """Materialise ``tensors`` in a graph of their own, leaving the rest of the device's
    pending graph (a step's spliced calls) pending: for values recorded op by op that a
    step's first call reads, such as an optimizer's state created at its first step
    (``Splice.settle_prelude``)."""
    _sync_device(device, list(tensors), wait=True)


def _starts_whole_step(device: LazyDevice) -> bool:
    """Whether this sync runs every pending tensor of ``device``: it has captured graphs
    spliced into its pending graph (``graph.fragments``), whose calls are one step, run as
    one program whichever of its results is read first (reading the loss alone would run
    the forward's call and leave the rest, which reads it, to recompute it in a second
    program). A read of a tensor already materialised runs it too: a step that started
    pending right after a read (the next step's first call launched the one before:
    ``Splice``) ends at the next read, not one call into the step after it. The tensors are
    listed under the device's lock (``_sync_device``'s ``whole_step``), so the graph holds
    every pending tensor by construction and its inputs need no second look before they
    are donated."""
    if not device.spliced:
        return False
    device.spliced.clear()
    return True


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
    device: LazyDevice,
    tensors: list[LazyTensor],
    wait: bool = True,
    extra_outputs=(),
    found: list | None = None,
    whole_step: bool = False,
) -> dict[Value, Value]:
    """Run the graph of ``tensors`` (and of ``extra_outputs``, values no tensor holds) and
    point the tensors at their data; returns each output value's data value. With
    ``whole_step``, every pending tensor of the device too (``_starts_whole_step``).
    ``found``: where to append the graph's ``(template, order, executable, outputs)``."""
    tensors = _with_must_run(device, tensors)
    with device.lock:
        if whole_step:  # listed under the lock: no pending tensor is left out
            tensors = tensors + device.live_tensors()
        # Another thread may have synced some meanwhile; a tensor may be listed twice.
        tensors = list(dict.fromkeys(pending(tensors)))
        if not tensors:
            return {}
        values = [t._value for t in tensors]
        outputs = list(dict.fromkeys(values + list(extra_outputs)))
        if whole_step:
            outputs = _in_canonical_order(outputs)
        try:
            plan, template, order, executable = _found(device, outputs, whole_step)
            debug.note_sync(device, executable, order, outputs)
            if found is not None:
                found.append((template, order, executable, outputs))
            # waits for runs they come from
            inputs = running.read_inputs(order, template.inputs, device.backend.torch_data)
            dead = None
            if device.backend.donates_inputs and (
                whole_step or _all_pending_synced(device, tensors)
            ):
                dead = unreferenced_inputs(order, template.inputs, input_reads(template))
        except LazyGraphError as error:
            failures.fail(device, tensors, values, error)
            raise
        if (
            wait
            or not settings.async_execution
            or not device.backend.asynchronous
            or type(executable) is UncompiledGraph
        ):
            try:
                data_of = _run_now(device, plan, executable, order, inputs, dead, outputs)
            except LazyGraphError as error:
                device.cache.forget(template.key)  # a later, fixed lowering must not reuse it
                failures.fail(device, tensors, values, error)
                raise
        else:
            launch = running.launch(
                device, executable, template.key, order, inputs, outputs, tensors, values
            )
            data_of = running.pending_outputs(device, launch, outputs, executable)
        running.point(tensors, values, data_of)
        return data_of


def _run_now(device: LazyDevice, plan, executable, order, inputs, dead, outputs) -> dict:
    """Run the graph; each output value's data value (a planned step's from its plan)."""
    ran = running.execute(device, executable, order, inputs, dead)
    if plan is None:
        results = running.finish(device, outputs, ran, "execute")
        return running.as_device_data(device, outputs, results, executable)
    results = step_plan.finish(device, plan, outputs, ran)
    return step_plan.device_data(device, plan, outputs, results)


def _in_canonical_order(outputs: list[Value]) -> list[Value]:
    """A whole step's outputs with each node's values together, by index, the nodes in the
    order they first appear. A graph's key holds its outputs in order, and a whole step
    lists them from the device's live tensors, in creation order, which need not follow the
    step's structure: an optimizer's state tensors created at its first step hold a spliced
    call's results in one order at step 1 and another at step 2 (SGD's momentum buffers),
    and the same program compiled again. Only the order of values of one node is
    canonical here, the one that varied; which node comes first still follows the tensors."""
    grouped: dict[Node, list[Value]] = {}
    for value in outputs:
        grouped.setdefault(value.node, []).append(value)
    if len(grouped) == len(outputs):
        return outputs
    ordered = []
    for values in grouped.values():
        if len(values) > 1:
            values.sort(key=_index_of)
        ordered += values
    return ordered


def _index_of(value: Value) -> int:
    return value.index


def _all_pending_synced(device: LazyDevice, tensors: list[LazyTensor]) -> bool:
    """Whether every pending tensor of ``device`` is in this graph (``mark_step``): only then
    does no node outside it read its inner nodes, which a later graph would recompute from
    its inputs (the condition of ``liveness.unreferenced_inputs``)."""
    synced = {id(t) for t in tensors}
    return all(t._value.node.is_input or id(t) in synced for t in device.live_tensors())


def _with_must_run(device: LazyDevice, tensors: list[LazyTensor]) -> list[LazyTensor]:
    """``tensors`` after the device's ``must_run`` ones (traced collectives), once the
    device's graphs in flight are done."""
    if not device.must_run:
        return tensors
    # Collectives run in trace order: first this device's graphs in flight (which may
    # hold earlier ones; two graphs never issue collectives at once), then the traced
    # ones ahead of everything else in this graph (post-order keeps their order).
    settle(device.in_flight, device.lock)
    with device.lock:
        must_run, device.must_run = device.must_run, []
    return must_run + list(tensors)


def _found(device: LazyDevice, outputs: list[Value], whole_step: bool) -> tuple:
    """``(plan, template, order, executable)`` of the graph of ``outputs``. A whole step
    replays the device's ``StepPlan`` first (``step_plan.py``: the last whole step's graph,
    when this one has its structure); one that misses takes the generic path and files its
    plan for the next. Any other sync: ``_compiled``, no plan."""
    if whole_step:
        planned = step_plan.find(device, outputs)
        if planned is not None:
            plan, order = planned
            return plan, plan.template, order, plan.executable
    template, order, executable = _compiled(device, outputs)
    plan = None
    if whole_step:
        plan = step_plan.remember(device, template, executable)
    return plan, template, order, executable


def _compiled(device: LazyDevice, outputs: list[Value]) -> tuple[GraphTemplate, list[Node], object]:
    """The graph of ``outputs``: its template (replayed from an earlier step with the same
    structure, or walked and keyed now), its post-order and its executable."""
    cache: GraphCache = device.cache
    template, order = cache.find_template(outputs)
    if template is not None:
        return template, order, compile_cached(device, template.key, order, outputs)
    metrics.count("GraphWalk")
    order, position = post_order(outputs)
    key = graph_key(order, position, outputs)
    template = GraphTemplate(key, order, position, outputs)
    del position  # holds every node: no input would look unreferenced (liveness)
    executable = compile_cached(device, key, order, outputs)
    cache.remember_template(template, outputs)
    return template, order, executable


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
        # every pending tensor is synced below: with spliced calls pending, as a whole step
        # (``_starts_whole_step`` clears them; its outputs in ``_in_canonical_order``)
        previous = len(dev.in_flight)
        # The previous run is waited for only once this step's graph is found and its
        # inputs are read (which waits for the runs they come from): the run overlaps
        # that work too, and the worker idles no longer than the launch itself.
        early = traced <= settings.early_results_max_nodes
        sync(dev.live_tensors(), wait, early_results=early)
        settle(dev.in_flight, dev.lock, None if wait else previous)
    if len(synced) == len(all_devices()):
        ir_reuse.end_step()  # every lazy tensor is materialised: the next step may reuse
    else:
        ir_reuse.reset()  # another device's tensors may still read this step's nodes
    _warn_about_graph_cuts(metrics.take_step_cuts())
    _warn_about_refusals(metrics.take_step_refusals())
    step_closures.run([launch for dev in synced for launch in list(dev.in_flight)])


def _warn_about_graph_cuts(cuts: dict[str, int]) -> None:
    """Once: say which ops without a lazy kernel cut the step that just ended."""
    if not cuts or not state.first_time("executor:graph cuts"):  # once per process
        return
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


def _warn_about_refusals(cuts: dict[str, int]) -> None:
    """Once: in a distributed program, say which refused ops cut the step that just ended.
    Every rank waits at each cut for its graph to run, so a refusal costs each step what a
    collective outside the graph would (FSDP2's ``as_strided_copy``, refused, cut GPT-2's
    steps 940 times a run on the jax backend before it was lowered)."""
    if not cuts or not (dist.is_available() and dist.is_initialized()):
        return
    if not state.first_time("executor:refusals"):
        return
    ranked = sorted(cuts.items(), key=lambda item: (-item[1], item[0]))
    named = ", ".join(f"{op} ({n}x)" for op, n in ranked[:8])
    warnings.warn(
        f"lazygen: in this distributed step, calls the backend refuses to run in a graph "
        f"cut it {sum(cuts.values())} times: {named}. Each ran eagerly after the graph "
        "traced so far; lazygen.runtime.metrics.fallback_report() lists them under "
        "'refused' with where they come from. (Warned once per process.)",
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
    device.spliced.clear()  # every pending tensor is synced below
    previous = len(device.in_flight)
    sync(device.live_tensors(), wait=False)
    settle(device.in_flight, device.lock, previous)
