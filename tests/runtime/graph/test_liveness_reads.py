"""``liveness.input_reads``: the operand slots a replayed step visits to decide which inputs
nothing else references, instead of every operand of the graph (a quarter of the encoder's
``mark_step`` on the jax backend went to that scan). Whatever it visits, the answer must be
the full scan's."""

from __future__ import annotations

import torch

from lazygen.runtime.execution.liveness import input_reads, unreferenced_inputs
from lazygen.runtime.graph import GraphTemplate, graph_key, post_order
from lazygen.runtime.ir import DeviceData, Node, Shape, Value

SHAPE = Shape(torch.float32, (2,))


class _Op(Node):
    """A computed node of one result (operands as given: Values, lists, None)."""

    __slots__ = ()
    op_name = "op"


def _op(*operands) -> Value:
    return Value(_Op(tuple(operands), (), (SHAPE,)), 0)


def _data() -> Value:
    # non-torch device data (``_backend`` set): the only kind liveness considers
    return Value(DeviceData(None, None, SHAPE, backend=object()), 0)


def _template(outputs: list[Value]) -> tuple[GraphTemplate, list[Node]]:
    order, position = post_order(outputs)
    return GraphTemplate(graph_key(order, position, outputs), order, position, outputs), order


def test_input_reads_are_the_slots_reading_inputs_lists_included():
    a, b = _data(), _data()
    first = _op(a, None)
    second = _op([a, None, b], first)
    template, order = _template([second])
    where = {n: i for i, n in enumerate(order)}
    index = {p: i for i, p in enumerate(template.inputs)}
    pa, pb = where[a.node], where[b.node]
    assert input_reads(template) == (
        (index[pa], pa, ((where[first.node], 0, -1), (where[second.node], 0, 0))),
        (index[pb], pb, ((where[second.node], 0, 2),)),
    )
    assert input_reads(template) is input_reads(template)  # made once


def test_reads_give_the_full_scans_answer_with_inputs_held_or_not():
    a, b, c = _data(), _data(), _data()
    shared = _op(a, a)  # one Value object in two slots
    outputs = [_op(shared, [b, c]), _op(b, Value(c.node, 0))]
    held = c  # the caller's Value of c is one more reference: c stays alive
    template, order = _template(outputs)
    del a, b, shared
    full = unreferenced_inputs(order, template.inputs)
    fast = unreferenced_inputs(order, template.inputs, input_reads(template))
    assert fast == full
    dead = {order[template.inputs[i]] for i in fast}
    assert held.node not in dead and len(dead) == 2


def test_reads_by_input_see_each_kind_of_holder():
    # per input: read once, read through two Value objects, one Value in two slots; each
    # dead while only the graph holds it, alive while a tensor-like holder keeps its node
    # or one of its Values
    for holder in ("none", "node", "value"):
        a, b, c = _data(), _data(), _data()
        outputs = [_op(a, Value(b.node, 0)), _op(b, c, c)]
        template, order = _template(outputs)
        kept = {"none": None, "node": c.node, "value": c}[holder]
        del a, b, c
        fast = unreferenced_inputs(order, template.inputs, input_reads(template))
        assert fast == unreferenced_inputs(order, template.inputs)
        assert len(fast) == (3 if kept is None else 2)
        del kept
