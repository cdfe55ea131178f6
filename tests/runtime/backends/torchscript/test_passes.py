"""Rewrites of lowered TorchScript graphs (lazygen/runtime/backends/torchscript/passes.py)."""

import torch
from support.ts_graphs import product_graph

from lazygen.runtime.backends.torchscript.passes import fold_double_transposes, transpose_products


def _graph(extra_use: str | None):
    """``t(mm(a, b))`` as the only output, or also returning the product / using it again."""
    graph, mm = product_graph()
    t = graph.create("aten::t", [mm.output()], 1)
    graph.insertNode(t)
    graph.registerOutput(t.output())
    if extra_use == "output":
        graph.registerOutput(mm.output())
        graph.makeMultiOutputIntoTuple()
    elif extra_use == "relu":
        relu = graph.create("aten::relu", [mm.output()], 1)
        graph.insertNode(relu)
        graph.registerOutput(relu.output())
        graph.makeMultiOutputIntoTuple()
    return graph


def _run(graph, *inputs):
    result = torch._C._create_function_from_graph("f", graph)(*inputs)
    return result if isinstance(result, tuple) else (result,)


def _kinds(graph):
    return [n.kind() for n in graph.nodes() if n.kind() != "prim::TupleConstruct"]


def test_transposed_product_becomes_a_contiguous_product():
    a, b = torch.randn(5, 3), torch.randn(3, 4)
    graph = _graph(None)
    assert transpose_products(graph) == 1
    assert _kinds(graph) == ["aten::t", "aten::t", "aten::mm"]
    (result,) = _run(graph, a, b)
    assert result.is_contiguous() and torch.allclose(result, (a @ b).t())


def test_a_product_that_is_also_returned_comes_back_as_a_view():
    a, b = torch.randn(5, 3), torch.randn(3, 4)
    graph = _graph("output")
    assert transpose_products(graph) == 1
    transposed, product = _run(graph, a, b)
    assert transposed.is_contiguous() and torch.allclose(transposed, (a @ b).t())
    assert torch.allclose(product, a @ b)


def test_transposed_operands_are_used_untransposed_and_their_transposes_dropped():
    """A weight's gradient ``t(mm(t(g), x))`` is ``mm(t(x), g)``: no ``t(t(g))`` for the
    interpreter to run once the lowered graph's passes are done (the tiny MLP step's graph
    had eight ``t`` of this kind)."""
    graph = torch._C.Graph()
    g, x = graph.addInput(), graph.addInput()
    for value in (g, x):
        value.setType(torch._C.TensorType.get())
    tg = graph.create("aten::t", [g], 1)
    graph.insertNode(tg)
    mm = graph.create("aten::mm", [tg.output(), x], 1)
    graph.insertNode(mm)
    t = graph.create("aten::t", [mm.output()], 1)
    graph.insertNode(t)
    graph.registerOutput(t.output())
    assert transpose_products(graph) == 1
    assert fold_double_transposes(graph) == 1
    assert _kinds(graph) == ["aten::t", "aten::mm"]
    (product,) = [n for n in graph.nodes() if n.kind() == "aten::mm"]
    assert list(product.inputs())[1].debugName() == g.debugName()
    a, b = torch.randn(5, 3), torch.randn(5, 4)
    (result,) = _run(graph, a, b)
    assert result.is_contiguous() and torch.allclose(result, (a.t() @ b).t())


def test_a_transpose_of_a_transpose_is_its_input():
    graph = torch._C.Graph()
    x = graph.addInput()
    x.setType(torch._C.TensorType.get())
    t1 = graph.create("aten::t", [x], 1)
    graph.insertNode(t1)
    t2 = graph.create("aten::t", [t1.output()], 1)
    graph.insertNode(t2)
    relu = graph.create("aten::relu", [t2.output()], 1)
    graph.insertNode(relu)
    graph.registerOutput(relu.output())
    graph.registerOutput(t1.output())  # the inner transpose is still read: it stays
    graph.makeMultiOutputIntoTuple()
    assert fold_double_transposes(graph) == 1
    assert _kinds(graph) == ["aten::t", "aten::relu"]
    a = torch.randn(3, 4)
    relu_out, transposed = _run(graph, a)
    assert torch.equal(relu_out, a.relu()) and torch.equal(transposed, a.t())


def test_a_product_with_other_uses_is_left_alone():
    graph = _graph("relu")
    before = str(graph)
    assert transpose_products(graph) == 0
    assert str(graph) == before


def test_equal_constants_share_one_node_and_distinct_ones_stay_apart():
    """Constants are pooled per graph (TorchScript's first run slows with many equal
    constants); 1, 1.0, True, 0.0 and -0.0 are different constants."""
    from lazygen.runtime.backends.torchscript.context import TSLoweringContext as LoweringContext

    ctx = LoweringContext()
    values = [1, 1.0, True, 0.0, -0.0, [1, 2], (1, 2), None, torch.float32]
    first = [ctx.constant(v) for v in values]
    again = [ctx.constant(v) for v in values]
    assert [a.unique() for a in first] == [b.unique() for b in again]
    distinct = {a.unique() for a in first}
    assert len(distinct) == len(values) - 1  # [1, 2] and (1, 2) are the same int[] constant
    assert [v.toIValue() for v in first[:5]] == [1, 1.0, True, 0.0, -0.0]
    assert str(first[4].toIValue()) == "-0.0"
