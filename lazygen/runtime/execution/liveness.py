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
#: The same, from one input's read slots (``_unreferenced_by_input``): ``getrefcount``'s
#: argument and the local, for the ``Value`` and for the node alike.
_OWN_SLOT_VALUE_REFS = 2
_OWN_SLOT_NODE_REFS = 2


def unreferenced_inputs(order: list[Node], positions, reads=None) -> frozenset[int]:
    """Indexes into ``positions`` (the graph's inputs, by position in ``order``) of the
    inputs whose data nothing outside the graph references: after the run no one can read
    them. ``order`` must be the one list holding the graph's nodes. ``reads``: the operand
    slots of ``order`` that read each input (``input_reads`` of its template, made for these
    ``positions``), so that only those are visited, input by input; None: every operand is.
    Always empty where this interpreter's reference counts are not the ones measured
    (``COUNTS_HOLD``)."""
    if not COUNTS_HOLD:
        return frozenset()
    if reads is None:
        return _unreferenced(order, positions)
    return _unreferenced_by_input(order, reads)


def _unreferenced(order: list[Node], positions) -> frozenset[int]:
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
    _count_all(order, candidates, uses)
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


def _unreferenced_by_input(order: list[Node], reads) -> frozenset[int]:
    """``unreferenced_inputs`` from each input's own read slots (a replayed step's template
    knows them): no dictionary of the graph's values is built. Most inputs are read through
    one ``Value`` object (a parameter's, read by the optimizer's call); an input read
    through several is counted as ``_unreferenced`` counts it."""
    dead = []
    for index, position, slots in reads:
        node = order[position]
        if type(node) is not DeviceData or node._backend is None or node._host is not None:
            continue
        value = _slot(order, slots[0])
        if len(slots) > 1 and any(_slot(order, slot) is not value for slot in slots):
            node = value = None  # our references would keep it alive
            if _unreferenced(order, [position]):
                dead.append(index)
            continue
        # refs of the one Value: the graph's slots + ours (argument, the local)
        # refs of the node: the order list, the Value + ours (argument, the local)
        if (
            sys.getrefcount(value) - _OWN_SLOT_VALUE_REFS <= len(slots)
            and sys.getrefcount(node) - _OWN_SLOT_NODE_REFS <= 2
        ):
            dead.append(index)
    return frozenset(dead)


def _slot(order: list[Node], slot: tuple[int, int, int]):
    p, k, s = slot
    value = order[p].operands[k]
    return value if s < 0 else value[s]


def input_reads(template) -> tuple[tuple[int, int, tuple[tuple[int, int, int], ...]], ...]:
    """For each input of ``template``'s graph that some operand reads, ``(index into
    template.inputs, position, slots)``, a slot being ``(node position, operand index, list
    index or -1)``: all that ``unreferenced_inputs`` needs to visit in a replayed step
    (whose nodes ``replay`` checked against the template's references), a few hundred of a
    training step's thousands. Made once per template: per call, the check is a reference
    count or two per input."""
    reads = template.input_reads
    if reads is None:
        index_of = {p: i for i, p in enumerate(template.inputs)}
        slots: dict[int, list] = {}
        for p, node_refs in enumerate(template.refs):
            for k, ref in enumerate(node_refs):
                if type(ref) is tuple:
                    if ref[0] in index_of:
                        slots.setdefault(ref[0], []).append((p, k, -1))
                elif ref is not None:
                    for s, r in enumerate(ref):
                        if r and r[0] in index_of:
                            slots.setdefault(r[0], []).append((p, k, s))
        reads = template.input_reads = tuple(
            (index_of[q], q, tuple(found)) for q, found in sorted(slots.items())
        )
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
    """Whether ``_unreferenced`` and ``_unreferenced_by_input`` answer right on graphs whose
    answer is known: an input read once, and one read through two ``Value`` objects, are
    dead while only the graph holds them, alive while a local holds the node, alive while
    a local holds a ``Value`` of it."""
    one_slot, two_slots = ((0, 0, ((1, 0, -1),)),), ((0, 0, ((1, 0, -1), (1, 1, -1))),)
    return all(
        _probe(find, values)
        for values, reads in ((1, one_slot), (2, two_slots))
        for find in (
            lambda order: _unreferenced(order, [0]),
            lambda order, reads=reads: _unreferenced_by_input(order, reads),
        )
    )


def _probe(find, values: int) -> bool:
    """``find``'s answers on a probe graph reading its input through ``values`` Values."""
    order: list[Node] = [DeviceData(None, shape=Shape(torch.float32, (1,)), backend=object())]
    order.append(_Probe(tuple(Value(order[0], 0) for _ in range(values))))
    free = find(order)
    held_node = order[0]
    with_node = find(order)
    del held_node
    held_value = order[1].operands[0]
    with_value = find(order)
    del held_value
    return free == {0} and not with_node and not with_value


#: Whether this interpreter's reference counts are the ones ``_unreferenced`` expects.
COUNTS_HOLD: bool = _counts_hold()
