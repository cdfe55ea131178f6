"""Why a graph compiles again: ``LAZYGEN_EXPLAIN_RECOMPILES=1`` (or
``config.set_explain_recompiles(True)``) reports every uncached compile that looks like a
variant of a graph already compiled: which node differs first from the nearest cached graph
(its op, its inputs' shapes and dtypes, its attributes), the user's ``file:line`` that traced
it, and what to do. Recompiles are counted by reason (``Recompile_shape``,
``Recompile_attribute``, ``Recompile_sharding``, ``Recompile_op``, ``Recompile_structure``, ``Recompile_outputs``).

Graph keys hold what a compiled graph depends on (op classes, attributes, shapes, which
position feeds each operand, the outputs), never data, so the first entry that differs names
the cause. "Nearest" is a cached graph with the same sequence of ops if there is one (a shape
or a constant changed), else the one sharing the longest run of ops from the start, when
that is at least half the graph (the program took another path); a graph like no other is a
new step structure, explained as such (``Recompile_new``): every uncached compile gets one
explanation, from the first step on.

A backend may compile a graph lazygen already cached again: Inductor compiles another
variant when a scalar it compiled in takes a new value, or when its size guards reject the
sizes of a graph compiled for all sizes. The backend explains those with
``report_explanation`` (reasons ``value`` and ``guard``, counted as ``Recompile_value`` and
``Recompile_guard``, apart from lazygen's own).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import MappingProxyType

from .. import metrics
from ..ir import DeviceData, Node, Shape
from . import GraphKey, dynamic

#: What to do, by reason.
ADVICE = MappingProxyType(
    {
        "shape": (
            "a tensor's size changed. Set LAZYGEN_DYNAMIC_SHAPES=1 (or call "
            "lazygen.runtime.mark_dynamic(tensor, dim)) to compile one graph for all sizes, or "
            "pad inputs to a few fixed sizes (bucketing)."
        ),
        "attribute": (
            "a Python value passed to an op (an int, a bool, a list of sizes) changed; it is "
            "a constant of the graph. Pass numbers that change every step as tensors."
        ),
        "size_attribute": (
            "a size passed to an op changed; it is a constant of the graph. Set "
            "LAZYGEN_DYNAMIC_SHAPES=1 to trace sizes as graph inputs (one graph for all "
            "sizes), or pad inputs to a few fixed sizes (bucketing)."
        ),
        "attribute_dynamic": (
            "a Python value passed to an op changed; it is a constant of the graph: dynamic "
            "shapes (on) trace sizes as graph inputs, and this value is not a size of the "
            "op's tensors. Keep it to a few values, or pass it as a tensor."
        ),
        "size_attribute_dynamic": (
            "this SymInt equals no size of the op's tensors, so it stays a constant of the "
            "graph (dynamic shapes, on, trace a SymInt equal to one of their sizes as a graph "
            "input). Keep it to a few values (pad), or pass it as a tensor."
        ),
        "shape_dynamic": (
            "a tensor's size changed. Dynamic shapes are on, but this graph is compiled for "
            "its own sizes (the reason follows, or its backend compiles per size: "
            "Backend.size_generic). Pad inputs to a few fixed sizes (bucketing) to bound these."
        ),
        "rank_dynamic": (
            "a tensor's dtype or number of dimensions changed: dynamic shapes (on) serve "
            "every size, not another rank or dtype. Expected once per kind of input."
        ),
        "sharding": (
            "a graph input is laid out over the devices otherwise than when the graph was "
            "compiled (lazygen.spmd.mark_sharding, or a result the partitioner laid out "
            "otherwise). Annotate it the same way every step."
        ),
        "op": "the program traced other ops here (a branch on data or on a Python value).",
        "structure": "the same ops read other inputs here (tensors aliased, or in another order).",
        "outputs": (
            "the step has other live results (a tensor kept from an earlier step, or one "
            "dropped): the same ops, another set of outputs."
        ),
        "new": (
            "no cached graph is a variant of it: the program's first steps (an optimizer's "
            "first step also creates its state), or another phase of it (evaluation, a branch). "
            "Expected once per kind of step; one every step means the program traces something "
            "new every step."
        ),
        "value": (
            "the backend compiled this number into its code (its lowering needs the value), "
            "so each new value compiles another variant. A value that changes every step "
            "recompiles every step: report it, naming the op."
        ),
        "guard": (
            "the backend compiled the graph for all sizes, under conditions on them (a size "
            "of 1, two sizes equal) that these sizes break; it compiles another variant. Pad "
            "inputs to avoid the condition (a size of 1) if it recurs."
        ),
        "sizes": (
            "the backend compiled the graph for all sizes once, but its compiler needs static "
            "shapes (XLA): each new set of sizes compiles an executable of its own, once. Pad "
            "inputs to a few sizes (bucketing) to bound these compiles."
        ),
    }
)


@dataclass(frozen=True)
class Explanation:
    """The first difference between a new graph and the nearest cached one."""

    reason: str
    position: int  # post-order position in the new graph (-1: the outputs)
    op: str
    source: str | None
    new: str
    cached: str
    nodes: int

    layer: str = "lazygen"  # who decided to compile: lazygen's graph key, or a backend
    advice: str = ""  # the key of ``ADVICE`` to print, when not ``reason``

    def __str__(self) -> str:
        where = "its outputs" if self.position < 0 else f"node %{self.position} {self.op}"
        line = self.source or "an unknown line"
        if self.reason == "new" and self.position < 0:
            headline = f"compiling a new graph of {self.nodes} nodes"
        elif self.reason == "new":
            headline = (
                f"compiling a new graph of {self.nodes} nodes; it leaves the nearest cached "
                f"graph at {where}, traced at {line}"
            )
        elif self.layer != "lazygen":
            headline = (
                f"backend {self.layer!r} compiles another variant of a graph of "
                f"{self.nodes} nodes: {self.op}, traced at {line}"
            )
        else:
            headline = (
                f"recompiling a graph of {self.nodes} nodes: it differs from a cached "
                f"graph at {where}, traced at {line}"
            )
        return (
            f"lazygen: {headline}\n"
            f"  now:    {self.new}\n  cached: {self.cached}\n"
            f"  reason: {self.reason}: {ADVICE[self.advice or self.reason]}"
        )


def explain(
    cached: list[GraphKey], key: GraphKey, order: list[Node], dynamic_on: bool = False
) -> Explanation | None:
    """Why ``key`` (the graph of ``order``) is not among ``cached``; None when no cached
    graph is a variant of it. ``key`` and ``cached`` may be size-generic keys
    (``graph.generic_key``: shapes as dtype and rank); ``dynamic_on``: whether dynamic
    shapes are on (the advice never says to turn on what is on)."""
    nearest = _nearest(cached, key)
    if nearest is None:
        return None
    return _first_difference(key, nearest, order, dynamic_on)


def _first_difference(key: GraphKey, nearest: GraphKey, order: list[Node], dynamic_on: bool):
    entries, outputs = key.entries[-2:]
    old_entries, old_outputs = nearest.entries[-2:]
    first_input = None  # an input whose shape changed: the first op reading it tells more
    for i, (entry, old) in enumerate(zip(entries, old_entries, strict=False)):
        if entry != old:
            if order[i].is_input and entry[0] is old[0]:
                first_input = i if first_input is None else first_input
                continue
            return _describe(i, entry, old, (entries, old_entries), order, dynamic_on)
    if first_input is not None:
        i = first_input
        return _describe(i, entries[i], old_entries[i], (entries, old_entries), order, dynamic_on)
    if len(entries) != len(old_entries):
        i = min(len(entries), len(old_entries))
        if i < len(entries):
            node = order[i]
            return Explanation(
                "op",
                i,
                _op(node),
                node.source,
                f"{_op(node)} and {len(entries) - i} more",
                f"the graph ends after {i} nodes",
                len(entries),
            )
        return Explanation(
            "op",
            -1,
            "",
            None,
            f"the graph ends after {i} nodes",
            f"{len(old_entries) - i} more nodes",
            len(entries),
        )
    return Explanation(
        "outputs",
        -1,
        "",
        None,
        f"outputs {list(outputs)}",
        f"outputs {list(old_outputs)}",
        len(entries),
    )


def report(
    cached: list[GraphKey],
    key: GraphKey,
    order: list[Node],
    outcome: str | None = None,
    generic: GraphKey | None = None,
) -> None:
    """Explain the compile of ``key``, count it by reason and print the explanation (to
    stderr), with ``outcome`` (what happens instead of a plain compile: a graph for all
    sizes, a run past the recompile budget) when there is one. ``generic``: the graph's
    size-generic key when dynamic shapes apply to it: a graph compiled for all sizes of a
    variant with the same ops then tells what differs besides sizes (an attribute). A
    diagnosis, never a failure: should explaining fail, the compile goes on."""
    try:
        explanation = _explanation(cached, key, order, generic)
    except Exception as error:  # best effort: the program's compile matters more
        print(f"lazygen: could not explain a recompile ({error!r})", file=sys.stderr)
        return
    report_explanation(explanation, outcome)


def report_explanation(explanation: Explanation, outcome: str | None = None) -> None:
    """Count ``explanation`` by reason and print it (to stderr), with ``outcome`` when
    there is one. Backends call it for the variants they compile themselves."""
    metrics.count(f"Recompile_{explanation.reason}")
    print(f"{explanation}\n  so:     {outcome}" if outcome else explanation, file=sys.stderr)


def _explanation(cached: list[GraphKey], key: GraphKey, order: list[Node], generic) -> Explanation:
    dynamic_on = dynamic.on()
    if generic is not None:
        same_ops = [k for k in cached if k.entries[0] == "size-generic" and _same_ops(k, generic)]
        if same_ops:
            entries = list(generic.entries[1])
            nearest = max(same_ops, key=lambda k: _common_prefix(entries, list(k.entries[1])))
            return _first_difference(generic, nearest, order, dynamic_on)
    cached = [k for k in cached if type(k.entries[0]) is tuple]  # not size-generic keys
    return explain(cached, key, order, dynamic_on) or _new_graph(cached, key, order)


def _same_ops(a: GraphKey, b: GraphKey) -> bool:
    return _types(a) == _types(b)


def _new_graph(cached: list[GraphKey], key: GraphKey, order: list[Node]) -> Explanation:
    """A graph no cached one is a variant of: where it leaves the cached graph sharing the
    longest start with it (the first node, when none is cached)."""
    types = _types(key)
    nodes = len(types)
    if not cached:
        return Explanation("new", -1, "", None, "the first graph compiled", "none", nodes)
    shared = max(_common_prefix(types, _types(k)) for k in cached)
    if shared >= nodes:  # all of it is the start of a longer cached graph
        return Explanation(
            "new", -1, "", None, f"the graph ends after {nodes} nodes", "longer graphs", nodes
        )
    node = order[shared]
    cached_text = f"{len(cached)} graphs, sharing its first {shared} nodes at most"
    return Explanation("new", shared, _op(node), node.source, _op(node), cached_text, nodes)


def _types(key: GraphKey) -> list:
    return [entry[0] for entry in key.entries[-2]]


def _common_prefix(a: list, b: list) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _nearest(cached: list[GraphKey], key: GraphKey) -> GraphKey | None:
    types = _types(key)
    same_ops = [k for k in cached if _types(k) == types]
    if same_ops:
        entries = list(key.entries[0])
        return max(same_ops, key=lambda k: _common_prefix(entries, list(k.entries[0])))
    best, best_prefix = None, 0
    for k in cached:
        prefix = _common_prefix(types, _types(k))
        if prefix > best_prefix:
            best, best_prefix = k, prefix
    return best if best_prefix * 2 >= len(types) and best_prefix > 0 else None


def _op(node: Node) -> str:
    return node.op_kind or node.op_name or type(node).__name__


def _shape_text(shape) -> str:
    if shape is None:
        return "undefined"
    if type(shape) is not Shape:  # a size-generic key's (dtype, rank)
        return f"{shape[0]}, {shape[1]} dims".replace("torch.", "")
    return f"{shape.dtype}{list(shape.sizes)}".replace("torch.", "")


def _operand_shapes(refs, entries) -> str:
    shapes = []
    for ref in refs:
        if ref is None:
            shapes.append("None")
        elif isinstance(ref[0], tuple) or ref[0] is None:  # a list operand
            shapes.append("[" + _operand_shapes(ref, entries) + "]")
        else:
            position, index = ref
            node_shapes = entries[position][2]
            shapes.append(
                _shape_text(node_shapes[index])
                if index < len(node_shapes)
                else entries[position][0].op_name  # an input without a shape: a generator
            )
    return ", ".join(shapes)


def _layout(attrs) -> str:
    return repr(attrs[0]) if attrs else "replicated"


def _describe(i, entry, old, keys, order, dynamic_on: bool) -> Explanation:
    entries, old_entries = keys
    node = order[i]
    cls, attrs, shapes, refs = entry
    old_cls, old_attrs, old_shapes, old_refs = old
    if cls is not old_cls:
        return Explanation(
            "op",
            i,
            _op(node),
            node.source,
            _op(node),
            old_cls.op_kind or old_cls.__name__,
            len(entries),
        )
    if attrs != old_attrs and isinstance(node, DeviceData):  # device data's attrs: its layout
        return Explanation(
            "sharding",
            i,
            _op(node),
            node.source,
            f"sharding {_layout(attrs)}",
            f"sharding {_layout(old_attrs)}",
            len(entries),
        )
    if attrs != old_attrs:
        return _attribute(i, node, attrs, old_attrs, len(entries), dynamic_on)
    new_inputs = _operand_shapes(refs, entries)
    old_inputs = _operand_shapes(old_refs, old_entries)
    if shapes != old_shapes or new_inputs != old_inputs:
        now = f"inputs {new_inputs} -> {', '.join(_shape_text(s) for s in shapes)}"
        before = f"inputs {old_inputs} -> {', '.join(_shape_text(s) for s in old_shapes)}"
        generic = any(s is not None and type(s) is not Shape for s in shapes)
        advice = ("rank_dynamic" if generic else "shape_dynamic") if dynamic_on else ""
        return Explanation(
            "shape", i, _op(node), node.source, now, before, len(entries), advice=advice
        )
    return Explanation(
        "structure",
        i,
        _op(node),
        node.source,
        f"operands {refs!r}",
        f"operands {old_refs!r}",
        len(entries),
    )


def _attribute(i: int, node: Node, attrs, old_attrs, nodes: int, dynamic_on: bool) -> Explanation:
    """An attribute changed: which one (its schema text, ``Node.attr_schema``), its value
    now and in the cached graph, and the advice for a size or another value."""
    slots = [j for j, (a, b) in enumerate(zip(attrs, old_attrs, strict=False)) if a != b]
    if len(attrs) != len(old_attrs) or not slots:
        now, cached, advice = f"attributes {attrs!r}", f"attributes {old_attrs!r}", ""
    else:
        j = slots[0]
        schema = node.attr_schema
        name = f"'{schema[j]}'" if j < len(schema) else f"{j}"
        now, cached = f"attribute {name} = {attrs[j]!r}", f"attribute {name} = {old_attrs[j]!r}"
        advice = "size_attribute" if j in node.size_attrs else "attribute"
    if dynamic_on:
        advice = f"{advice or 'attribute'}_dynamic"
    return Explanation("attribute", i, _op(node), node.source, now, cached, nodes, advice=advice)
