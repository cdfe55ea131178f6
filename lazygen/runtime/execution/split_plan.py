"""A step's early-results split (``split.py``), replayed from a plan instead of walked.

The generic split costs a steady step four passes over its graph: ``split.split`` walks it
to find the first graph's region and the values handed over, each of the two graphs is
replayed against its template, and ``split.hand_over`` rebuilds every node of the second
graph that reads the first one (559 of a two-layer decoder's ~900 nodes, at every step).
A training loop splits the same structure at every step, so once two consecutive steps
split into the same pair of graphs, a ``SplitPlan`` keeps, by post-order position in the
whole step's graph, what the split found:

* the replay of the whole step's template is the guard: it checks every node's class,
  attributes, shapes and operands, and that distinct slots hold distinct nodes. A step that
  matches has the structure the plan was made from, so its first graph is the plan's
  positions of it, and both graphs' templates and executables are the cached ones (checked
  with ``cache.get``: a graph evicted or forgotten after a failed run ends the plan);
* the second graph's inputs are read from the step's nodes and the first graph's outputs by
  position: its nodes are not rebuilt. They are rebuilt only if its run fails, for the
  error's diagnosis and for what the failed tensors keep (``running.launch``'s
  ``described``). Should reading its inputs fail (the first graph failed), the generic
  hand-over runs and the generic sync raises as it would have.

A step whose graph differs misses and takes the generic path, which files a plan when the
pair of graphs repeats. Backends that donate inputs are left to the generic path, which
decides donation per run.
"""

from __future__ import annotations

import functools

from .. import debug, metrics
from ..devices import LazyDevice
from ..errors import LazyGraphError
from ..graph import GraphTemplate, post_order, replay
from ..graph.uncompiled import UncompiledGraph
from ..ir import Node, Value
from ..tracing.tensor import LazyTensor
from . import running
from .split import Split, hand_over, rebuild, single_element

#: ``Value(node, i)`` without the NamedTuple's Python-level ``__new__``.
_new_value = tuple.__new__

#: Plans kept per device (most recently used first): a loop alternating a few step shapes.
_PLANS_PER_DEVICE = 4


class SplitPlan:
    """What a split found, by position in the whole step's post-order (module docstring)."""

    __slots__ = (
        "whole", "early", "early_executable", "early_positions", "early_refs", "early_count",
        "rest", "rest_executable", "rest_sources", "rest_refs", "second",
    )  # fmt: skip

    def __init__(self, whole: GraphTemplate, early: tuple, rest: tuple) -> None:
        self.whole = whole  # the template of every pending value of the step
        self.early, self.early_executable = early
        self.rest, self.rest_executable = rest
        self.early_positions: list[int] = []  # the first graph's post-order
        self.early_refs: list[tuple[int, int]] = []  # its outputs
        self.early_count = 0  # how many of them the single-element tensors hold (the first)
        #: Per node of the second graph: the position of the node it is (or is rebuilt
        #: from), or ``-1 - j`` for the first graph's output ``j`` (handed-over data).
        self.rest_sources: list[int] = []
        self.rest_refs: list[tuple[int, int]] = []  # its outputs (as traced)
        self.second: list[int] = []  # ``Split.second``: the nodes rebuilt on failure


class Replayed:
    """A step matched by a plan: its two graphs' nodes, outputs and tensors."""

    __slots__ = (
        "plan", "slots", "early", "early_values", "early_outputs", "early_order",
        "others", "rest", "rest_values", "rest_outputs",
    )  # fmt: skip


def find(device: LazyDevice, tensors: list[LazyTensor]) -> Replayed | None:
    """The plan matching the split of pending ``tensors`` (each listed once), or None."""
    plans = device.split_plans
    if not plans or debug.save_tensors_file():  # saving each graph's IR needs the rebuilt nodes
        return None
    outputs = list(dict.fromkeys([t._value for t in tensors]))
    cache = device.cache
    for plan in list(plans):
        if len(outputs) != len(plan.whole.outputs):
            continue
        if (
            cache.get(plan.early.key) is not plan.early_executable
            or cache.get(plan.rest.key) is not plan.rest_executable
        ):
            plans.remove(plan)  # a graph evicted or forgotten: compiled anew, planned anew
            continue
        slots = replay(plan.whole, outputs)
        if slots is None:
            continue
        replayed = _graphs(plan, slots, tensors)
        if replayed is not None:
            if plans[0] is not plan:
                plans.remove(plan)
                plans.insert(0, plan)
            metrics.count("SplitPlanReplay")
            metrics.count("CachedCompile", 2)  # as the generic path counts its two graphs
            return replayed
    metrics.count("SplitPlanMiss")
    return None


def sync(device: LazyDevice, tensors: list[LazyTensor], sync_device, sync_rest_quietly) -> bool:
    """Sync pending ``tensors`` (each listed once) as their step's plan splits them, both
    graphs launched; False, having done nothing, when no plan matches. ``sync_device`` and
    ``sync_rest_quietly``: the executor's generic syncs, for the failures it leaves to them."""
    replayed = find(device, tensors)
    if replayed is None:
        return False
    plan, torch_data = replayed.plan, device.backend.torch_data
    order, outputs = replayed.early_order, replayed.early_outputs
    try:
        inputs = running.read_inputs(order, plan.early.inputs, torch_data)
    except LazyGraphError:
        return False  # an input from a failed run: the generic path fails as it does
    metrics.count("EarlyResultGraph")
    debug.note_sync(device, plan.early_executable, order, outputs)
    early, values, executable = replayed.early, replayed.early_values, plan.early_executable
    try:
        launch = running.launch(
            device, executable, plan.early.key, order, inputs, outputs, early, values
        )
    except LazyGraphError:
        sync_rest_quietly(device, replayed.others)
        raise
    data_of = running.pending_outputs(device, launch, outputs, executable)
    running.point(early, values, data_of)
    for t in replayed.others:  # results of the first graph itself
        t._value = data_of.get(t._value, t._value)
    order = rest_order(replayed, data_of)
    try:  # waits for the first graph
        inputs = running.read_inputs(order, plan.rest.inputs, torch_data)
    except LazyGraphError:  # the first graph failed: the generic second graph says so
        hand_over(as_split(replayed), data_of)
        sync_device(device, replayed.rest, wait=False)
        raise
    tensors, values, outputs = replayed.rest, replayed.rest_values, replayed.rest_outputs
    executable = plan.rest_executable
    debug.note_sync(device, executable, order, outputs)
    launch = running.launch(
        device, executable, plan.rest.key, order, inputs, outputs, tensors, values,
        described(replayed, order, data_of),
    )  # fmt: skip
    running.point(tensors, values, running.pending_outputs(device, launch, outputs, executable))
    return True


def _graphs(plan: SplitPlan, slots: list, tensors: list[LazyTensor]) -> Replayed | None:
    """The two graphs of a step whose whole graph replayed ``plan.whole``; None if its
    tensors do not split as the plan's did (then the generic path splits it)."""
    early, others = [], []
    for t in tensors:
        (early if single_element(t) else others).append(t)
    early_outputs = [_new_value(Value, (slots[p], i)) for p, i in plan.early_refs]
    early_values = [t._value for t in early]
    if list(dict.fromkeys(early_values)) != early_outputs[: plan.early_count]:
        return None
    handed = set(early_outputs)
    rest = [t for t in others if t._value not in handed]
    rest_values = [t._value for t in rest]
    rest_outputs = [_new_value(Value, (slots[p], i)) for p, i in plan.rest_refs]
    if list(dict.fromkeys(rest_values)) != rest_outputs:
        return None
    replayed = Replayed()
    replayed.plan, replayed.slots = plan, slots
    replayed.early, replayed.early_values, replayed.early_outputs = (
        early,
        early_values,
        early_outputs,
    )
    replayed.early_order = [slots[p] for p in plan.early_positions]
    replayed.others, replayed.rest = others, rest
    replayed.rest_values, replayed.rest_outputs = rest_values, rest_outputs
    return replayed


def rest_order(replayed: Replayed, data_of: dict[Value, Value]) -> list[Node]:
    """The second graph's nodes as traced: its inputs as they are (the first graph's outputs
    being its pending data), its computed nodes the step's own, not rebuilt (their operands
    may read the first graph: only the inputs and the length of this list are read, unless
    the run fails, see ``described``)."""
    slots = replayed.slots
    handed = [data_of[v][0] for v in replayed.early_outputs]
    return [slots[p] if p >= 0 else handed[-1 - p] for p in replayed.plan.rest_sources]


def described(replayed: Replayed, order: list[Node], data_of: dict[Value, Value]):
    """What returns the second graph as the generic split builds it, ``(order, values)``
    (``running.launch``'s ``described``: for a failed run only)."""
    return functools.partial(_rebuilt_graph, replayed, order, data_of)


def _rebuilt_graph(replayed: Replayed, order: list[Node], data_of: dict) -> tuple[list, list]:
    rebuilt = rebuild([replayed.slots[p] for p in replayed.plan.second], data_of)
    values = [_new_value(Value, (rebuilt.get(v[0], v[0]), v[1])) for v in replayed.rest_values]
    return [rebuilt.get(node, node) for node in order], values


def as_split(replayed: Replayed) -> Split:
    """The ``Split`` the generic path would have made (for ``split.hand_over``)."""
    second = [replayed.slots[p] for p in replayed.plan.second]
    return Split(replayed.early, replayed.others, list(replayed.early_outputs), [], second)


def remember(
    device: LazyDevice,
    tensors: list[LazyTensor],
    values: list[Value],
    split: Split,
    graphs: list[tuple],
    data_of: dict[Value, Value],
    rebuilt: dict[Node, Node],
) -> None:
    """After a generic split of pending ``tensors``, whose values were ``values``: file its plan
    once the same pair of graphs split two steps in a row. ``graphs``: each graph's
    ``(template, order, executable, outputs)``; ``data_of``: the first graph's output data;
    ``rebuilt``: ``split.hand_over``'s rebuilt nodes."""
    if len(graphs) != 2 or device.backend.donates_inputs:
        return
    (early, early_order, early_exe, early_outputs), (rest, order, rest_exe, rest_outputs) = graphs
    if type(early_exe) is UncompiledGraph or type(rest_exe) is UncompiledGraph:
        return
    pair = (early.key, rest.key)
    if device.split_last != pair:
        device.split_last = pair  # planned when the next step splits the same way
        return
    whole_outputs = list(dict.fromkeys(values))
    whole_order, position = post_order(whole_outputs)
    plan = SplitPlan(
        GraphTemplate(None, whole_order, position, whole_outputs),
        (early, early_exe),
        (rest, rest_exe),
    )
    replaced = {new: old for old, new in rebuilt.items()}
    handed = {data_of[v][0]: j for j, v in enumerate(early_outputs)}
    try:
        plan.early_positions = [position[node] for node in early_order]
        plan.early_refs = [(position[v[0]], v[1]) for v in early_outputs]
        plan.rest_sources = [
            position[replaced.get(node, node)] if node not in handed else -1 - handed[node]
            for node in order
        ]
        plan.rest_refs = [(position[replaced.get(v[0], v[0])], v[1]) for v in rest_outputs]
        plan.second = [position[node] for node in split.second]
    except KeyError:  # a node outside the step's graph: nothing to plan by position
        return
    early_values = [v for t, v in zip(tensors, values, strict=True) if single_element(t)]
    plan.early_count = len(dict.fromkeys(early_values))
    device.split_plans.insert(0, plan)
    del device.split_plans[_PLANS_PER_DEVICE:]
