"""``graph.replay`` (whole-list work) matches exactly the graphs the operand-by-operand match
it replaced matches (``_replay_by_operand`` below, the reference): the same post-order where
the structure repeats, None wherever it differs (a node's class, attrs, shapes, operand
count, output index, an absent optional, a list's length, or which nodes are shared)."""

import random

import torch

from lazygen.runtime.graph import GraphTemplate, post_order, replay
from lazygen.runtime.ir import Node, Shape, Value

_F = (Shape(torch.float32, (2,)),)
_TWO = (Shape(torch.float32, (2,)), Shape(torch.float32, (2,)))


class Leaf(Node):
    __slots__ = ()
    is_input = True


class Op(Node):
    __slots__ = ()


class Other(Node):
    __slots__ = ()


def _template(outputs):
    order, position = post_order(outputs)
    return GraphTemplate(None, order, position, outputs)


def _replay_by_operand(template, outputs):
    """The reference: each operand claimed for its slot in turn, failing when another node
    holds the slot or this node holds another one."""
    slots, seen = [None] * template.size, {}

    def claim(value, ref) -> bool:
        if value is None or ref is None:
            return value is ref
        if type(value) is not Value or type(ref) is not tuple or value.index != ref[1]:
            return False
        held = seen.setdefault(value.node, ref[0])
        if held != ref[0] or slots[held] not in (None, value.node):
            return False
        slots[held] = value.node
        return True

    def claim_all(values, refs) -> bool:
        return len(values) == len(refs) and all(map(claim, values, refs))

    if not claim_all(outputs, template.outputs):
        return None
    for i in range(template.size - 1, -1, -1):
        node = slots[i]
        if node is None or type(node) is not template.types[i]:
            return None
        if node.shapes != template.shapes[i] or node.attrs != template.attrs[i]:
            return None
        refs = template.refs[i]
        if len(node.operands) != len(refs):
            return None
        for operand, ref in zip(node.operands, refs, strict=True):
            if type(ref) is list:
                if type(operand) is not tuple or not claim_all(operand, ref):
                    return None
            elif not claim(operand, ref):
                return None
    return slots


def _both(template, outputs):
    fast = replay(template, outputs)
    assert fast == _replay_by_operand(template, outputs)
    return fast


def _graph(shared=True, index=0, absent=False, listed=2, cls=Op, attrs=(1,), shapes=_F):
    """A small graph with a shared input, a two-output node, an optional and a list."""
    a = Leaf((), (), _F)
    b = a if not shared else Leaf((), (), _F)
    pair = Op((Value(a, 0),), (), _TWO)
    opt = None if absent else Value(b, 0)
    mid = cls((Value(pair, index), opt), attrs, shapes)
    cat = Op((tuple(Value(a, 0) for _ in range(listed)),), (), _F)
    return [Value(mid, 0), Value(cat, 0), Value(pair, 1)]


def test_same_structure_replays_in_post_order():
    template = _template(_graph())
    outputs = _graph()
    order = _both(template, outputs)
    assert order == post_order(outputs)[0]


def test_each_difference_refuses():
    template = _template(_graph())
    for changed in (
        dict(shared=False),  # one input where the template has two: aliasing differs
        dict(index=1),  # another output of the same node
        dict(absent=True),  # an absent optional where the template has a value
        dict(listed=3),  # a longer list
        dict(cls=Other),
        dict(attrs=(2,)),
        dict(shapes=(Shape(torch.float64, (2,)),)),
    ):
        assert _both(template, _graph(**changed)) is None, changed
    assert _both(_template(_graph(absent=True)), _graph()) is None  # a value where None was


def test_operand_count_and_output_count_refuse():
    template = _template(_graph())
    outputs = _graph()
    outputs[0].node.operands = outputs[0].node.operands + (None,)
    assert _both(template, outputs) is None
    assert _both(template, _graph()[:2]) is None


def test_operands_moved_between_nodes_refuse():
    """The same flat sequence of operands, split differently between two nodes."""

    def graph(split):
        a, b, c = (Leaf((), (), _F) for _ in range(3))
        x = Op(tuple(Value(n, 0) for n in (a, b)[:split]), (), _F)
        y = Op((Value(c, 0),) + tuple(Value(n, 0) for n in (a, b)[split:]), (), _F)
        return [Value(x, 0), Value(y, 0)]

    assert _both(_template(graph(2)), graph(1)) is None
    assert _both(_template(graph(1)), graph(2)) is None
    assert _both(_template(graph(1)), graph(1)) is not None


def test_a_list_where_a_value_was_refuses():
    def graph(listed):
        a, b = Leaf((), (), _F), Leaf((), (), _F)
        second = (Value(b, 0),) if listed else Value(b, 0)
        return [Value(Op((Value(a, 0), second), (), _F), 0)]

    assert _both(_template(graph(False)), graph(True)) is None
    assert _both(_template(graph(True)), graph(False)) is None


def test_entries_moved_between_lists_refuse():
    """The same flat sequence of list entries, split differently between two lists."""

    def graph(split):
        a, b, c = (Leaf((), (), _F) for _ in range(3))
        values = tuple(Value(n, 0) for n in (a, b, c))
        return [Value(Op((values[:split], values[split:]), (), _F), 0)]

    assert _both(_template(graph(1)), graph(2)) is None
    assert _both(_template(graph(2)), graph(2)) is not None


def _random_graph(rng: random.Random, width: int, seed_shape: int):
    leaves = [Leaf((), (), _F) for _ in range(3)]
    nodes = list(leaves)
    for _ in range(width):
        kind = rng.random()
        pick = lambda: Value(rng.choice(nodes), 0)  # noqa: E731
        if kind < 0.5:
            operands = (pick(), pick())
        elif kind < 0.7:
            operands = (pick(), None)
        else:
            operands = (tuple(pick() for _ in range(rng.randint(0, 3))),)
        nodes.append(Op(operands, (rng.randint(0, seed_shape),), _F))
    return [Value(n, 0) for n in nodes[-2:]]


def test_random_graphs_agree_with_the_operand_replay():
    for seed in range(200):
        template = _template(_random_graph(random.Random(seed), 12, 1))
        for other in range(8):
            # Same seed: same structure (new nodes); other seeds: mostly different ones.
            rng = random.Random(seed if other == 0 else 1000 * seed + other)
            outputs = _random_graph(rng, 12, 1)
            found = _both(template, outputs)
            if other == 0:
                assert found == post_order(outputs)[0]
