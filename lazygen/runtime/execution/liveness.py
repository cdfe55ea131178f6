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
"""

from __future__ import annotations

import sys

from ..ir import DeviceData, Node, Value

#: References to an input node that ``unreferenced_inputs`` itself holds: ``getrefcount``'s
#: argument, the loop variable and the ``candidates`` entry.
_OWN_NODE_REFS = 3
#: References to a ``Value`` that ``unreferenced_inputs`` itself holds: ``getrefcount``'s
#: argument, the loop variable and the ``uses`` entry.
_OWN_VALUE_REFS = 3


def unreferenced_inputs(order: list[Node], positions) -> frozenset[int]:
    """Indexes into ``positions`` (the graph's inputs, by position in ``order``) of the
    inputs whose data nothing outside the graph references: after the run no one can read
    them. ``order`` must be the one list holding the graph's nodes."""
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
    node = operand = value = None
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
