"""Which graph inputs nothing reads after a run: what a backend may donate.

A training step overwrites its parameters and optimizer state: the step's graph reads each
one's old ``DeviceData`` and the tensor is pointed at the graph's output, so after the run
the old data is garbage. A backend that can let the run write its results into such an
input's memory (XLA's buffer donation, ``Backend.donates_inputs``) saves an allocation and
a copy per updated tensor, but only if nothing can read that input again: a deleted JAX
array raises on every read, and lazygen must never hand one out.

The caller asks only when every pending tensor of the device is in the graph (a
``mark_step``): a node of the graph that a pending tensor outside it still reads would be
recomputed by a later graph, from these same inputs.
"Nothing reads it again" is then decided from reference counts, conservatively: an input is
unreferenced when every reference to its ``DeviceData`` is a ``Value`` held by the graph's
own nodes (their operands) or the graph's node list. A tensor pointing at it, a pending node
outside the graph, a host view (``DeviceData._host``: torch memory shared through DLPack),
IR reuse's slot (``ReusedData``), the compile cache's first plan: each holds one more
reference and keeps the input alive. A reference the count misses cannot exist in CPython
(a weak reference reads nothing once its target is gone, and this target only goes when
unreferenced). Only inputs holding non-torch data are considered (``DeviceData._backend``).

The counts this relies on (what ``sys.getrefcount`` reports for the references this module
holds itself) are the ones measured on CPython 3.11; an interpreter that counts otherwise
(borrowed references in loops, a free-threaded build) could make a referenced input look
dead. ``COUNTS_HOLD`` checks them once, at import, on a probe graph whose answer is known
(an input nothing else holds is dead; one held by a local, or through one of its
``Value`` objects, is not); where they do not hold, nothing is ever reported dead and donation
is simply off.
"""

from __future__ import annotations

import sys

import torch

from ..ir import DeviceData, Node, Shape, Value

#: References to an input node that ``unreferenced_inputs`` itself holds: ``getrefcount``'s
#: argument, the loop variable and the ``candidates`` entry.
_OWN_NODE_REFS = 3
#: References to a ``Value`` that ``unreferenced_inputs`` itself holds: ``getrefcount``'s
#: argument, the loop variable and the ``uses`` entry.
_OWN_VALUE_REFS = 3


def unreferenced_inputs(order: list[Node], positions, reads=None) -> frozenset[int]:
    """Indexes into ``positions`` (the graph's inputs, by position in ``order``) of the
    inputs whose data nothing outside the graph references: after the run no one can read
    them. ``order`` must be the one list holding the graph's nodes. ``reads``: the operand
    slots of ``order`` that read inputs (``input_reads`` of its template), so that only
    those are visited; None: every operand is. Always empty where this interpreter's
    reference counts are not the ones measured (``COUNTS_HOLD``)."""
    if not COUNTS_HOLD:
        return frozenset()
    return _unreferenced(order, positions, reads)


def _unreferenced(order: list[Node], positions, reads=None) -> frozenset[int]:
    candidates: dict[int, tuple[int, DeviceData]] = {}
    for index, position in enumerate(positions):
        node = order[position]
        if type(node) is DeviceData and node._backend is not None and node._host is None:
            candidates[id(node)] = (index, node)
    node = None
    if not candidates:
        return frozenset()
    # every Value object naming a candidate, and how many operand slots of the graph hold it
    uses: dict[int, list] = {}
    if reads is None:
        _count_all(order, candidates, uses)
    else:
        _count_reads(order, reads, candidates, uses)
    values_per_node: dict[int, int] = {}
    alive: set[int] = set()
    for entry in uses.values():
        value = entry[0]
        # refs: the graph's operand slots + ours (argument, the local, the uses entry)
        if sys.getrefcount(value) - _OWN_VALUE_REFS > entry[1]:
            alive.add(entry[2])
        values_per_node[entry[2]] = values_per_node.get(entry[2], 0) + 1
    value = None
    dead = []
    for key, (index, node) in candidates.items():
        if key in alive:
            continue
        # refs: the order list, one per Value object naming it, ours
        expected = 1 + values_per_node.get(key, 0) + _OWN_NODE_REFS
        if sys.getrefcount(node) <= expected:
            dead.append(index)
    return frozenset(dead)


def _count_all(order: list[Node], candidates: dict, uses: dict) -> None:
    """``uses`` of ``unreferenced_inputs`` from every operand of the graph (holds no
    reference once it returns)."""
    for node in order:
        for operand in node.operands:
            # an operand is a Value, None, or a list of them (a ``Tensor[]`` argument)
            for value in operand if type(operand) in (list, tuple) else (operand,):
                if type(value) is Value and id(value.node) in candidates:
                    entry = uses.get(id(value))
                    if entry is None:
                        uses[id(value)] = [value, 1, id(value.node)]
                    else:
                        entry[1] += 1


def _count_reads(order: list[Node], reads, candidates: dict, uses: dict) -> None:
    """``uses`` of ``unreferenced_inputs`` from the operand slots ``reads`` only (holds no
    reference once it returns)."""
    for p, k, s in reads:
        value = order[p].operands[k]
        if s >= 0:
            value = value[s]
        if id(value[0]) in candidates:
            entry = uses.get(id(value))
            if entry is None:
                uses[id(value)] = [value, 1, id(value[0])]
            else:
                entry[1] += 1


def input_reads(template) -> tuple[tuple[int, int, int], ...]:
    """The operand slots of ``template``'s graph that read one of its inputs, as
    ``(node position, operand index, list index or -1)``: all that ``unreferenced_inputs``
    needs to visit in a replayed step (whose nodes ``replay`` checked against the template's
    references), a few hundred of a training step's thousands. Made once per template."""
    reads = template.input_reads
    if reads is None:
        inputs = set(template.inputs)
        found = []
        for p, node_refs in enumerate(template.refs):
            for k, ref in enumerate(node_refs):
                if type(ref) is tuple:
                    if ref[0] in inputs:
                        found.append((p, k, -1))
                elif ref is not None:
                    found.extend((p, k, s) for s, r in enumerate(ref) if r and r[0] in inputs)
        reads = template.input_reads = tuple(found)
    return reads


class _Probe(Node):
    """A node reading one input: the probe graph of ``_counts_hold``."""

    __slots__ = ()

    def __init__(self, operands) -> None:
        self.operands = operands
        self.attrs = ()
        self.shapes = ()
        self.source = None


def _counts_hold() -> bool:
    """Whether ``_unreferenced`` answers right on a graph whose answer is known: its one
    input is dead while only the graph holds it, alive while a local holds the node, alive
    while a local holds a ``Value`` of it."""
    order: list[Node] = [DeviceData(None, shape=Shape(torch.float32, (1,)), backend=object())]
    order.append(_Probe((Value(order[0], 0),)))
    free = _unreferenced(order, [0])
    held_node = order[0]
    with_node = _unreferenced(order, [0])
    del held_node
    held_value = order[1].operands[0]
    with_value = _unreferenced(order, [0])
    del held_value
    return free == {0} and not with_node and not with_value


#: Whether this interpreter's reference counts are the ones ``_unreferenced`` expects.
COUNTS_HOLD: bool = _counts_hold()
