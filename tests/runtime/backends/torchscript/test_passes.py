"""Rewrites of lowered TorchScript graphs (lazygen/runtime/backends/torchscript/passes.py)."""

import torch
from support.ts_graphs import product_graph

from lazygen.runtime.backends.torchscript.passes import (
    fold_double_transposes,
    fold_filled_products,
    transpose_products,
    write_in_place,
)


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
    from lazygen.runtime.backends.torchscript.lowering import TSLoweringContext as LoweringContext

    ctx = LoweringContext()
    values = [1, 1.0, True, 0.0, -0.0, [1, 2], (1, 2), None, torch.float32]
    first = [ctx.constant(v) for v in values]
    again = [ctx.constant(v) for v in values]
    assert [a.unique() for a in first] == [b.unique() for b in again]
    distinct = {a.unique() for a in first}
    assert len(distinct) == len(values) - 1  # [1, 2] and (1, 2) are the same int[] constant
    assert [v.toIValue() for v in first[:5]] == [1, 1.0, True, 0.0, -0.0]
    assert str(first[4].toIValue()) == "-0.0"


# write_in_place ---------------------------------------------------------------------------


def _writing_graph(op: str, read_after: bool = False, returned: bool = False, reuse=False):
    """``x = op(a, b)``, then ``copy_(a, x)`` (an ``InputWrite``); optionally ``a`` read
    again after ``op``, ``x`` returned, or ``x`` read by a later ``mul``. Returns the graph
    and the copy node."""
    graph = torch._C.Graph()
    a, b = graph.addInput(), graph.addInput()
    for value in (a, b):
        value.setType(torch._C.TensorType.get())
    args = [a, b] + ([graph.insertConstant(1)] if op == "aten::add" else [])
    x = graph.create(op, args, 1)
    graph.insertNode(x)
    outputs = []
    if read_after:
        later = graph.create("aten::mul", [a, b], 1)
        graph.insertNode(later)
        outputs.append(later.output())
    if returned:
        outputs.append(x.output())
    if reuse:
        later = graph.create("aten::mul", [x.output(), b], 1)
        graph.insertNode(later)
        outputs.append(later.output())
    copy = graph.create("aten::copy_", [a, x.output(), graph.insertConstant(False)], 1)
    graph.insertNode(copy)
    for output in outputs or [graph.insertConstant(None)]:
        graph.registerOutput(output)
    if len(outputs) > 1:
        graph.makeMultiOutputIntoTuple()
    return graph, copy


def test_a_pointwise_value_written_into_an_input_is_computed_into_it():
    graph, copy = _writing_graph("aten::add")
    assert write_in_place(graph, [copy]) == 1
    (add,) = [n for n in graph.nodes() if n.kind() == "aten::add"]
    assert "aten::copy_" not in _kinds(graph) and add.schema().startswith("aten::add.out(")
    a, b = torch.randn(4, 3), torch.randn(4, 3)
    expected = a + b
    _run(graph, a, b)
    assert torch.equal(a, expected)


def test_later_readers_of_the_written_value_read_the_input():
    graph, copy = _writing_graph("aten::add", reuse=True)
    assert write_in_place(graph, [copy]) == 1
    a, b = torch.randn(4, 3), torch.randn(4, 3)
    new_a = a + b
    (result,) = _run(graph, a, b)
    assert torch.equal(a, new_a) and torch.equal(result, new_a * b)


def test_an_input_read_after_the_op_keeps_its_copy_at_the_end():
    """``mul(a, b)`` after the op must read ``a``'s old value."""
    graph, copy = _writing_graph("aten::add", read_after=True)
    assert write_in_place(graph, [copy]) == 0
    a, b = torch.randn(4, 3), torch.randn(4, 3)
    expected = a * b
    (result,) = _run(graph, a, b)
    assert torch.equal(result, expected)


def test_a_value_the_graph_returns_is_not_written_into_the_input():
    graph, copy = _writing_graph("aten::add", returned=True)
    assert write_in_place(graph, [copy]) == 0
    assert "aten::copy_" in _kinds(graph)


def test_only_pointwise_ops_write_their_result_into_an_input():
    """``mm`` has an out variant, but out may not be one of its operands."""
    graph, copy = _writing_graph("aten::mm")
    assert write_in_place(graph, [copy]) == 0
    a, b = torch.randn(3, 3), torch.randn(3, 3)
    expected = a @ b
    _run(graph, a, b)
    assert torch.equal(a, expected)


_LERP = """graph(%a : Tensor, %d : Tensor):
  %none : NoneType = prim::Constant()
  %false : bool = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %value : {value_type} = prim::Constant[value={value}]()
  %w : float = prim::Constant[value=0.1]()
  %dtype : {dtype_type} = prim::Constant{dtype}()
  %filled : Tensor = aten::full_like(%d, %w, %dtype, %none, %none, %false, %none)
  %out : Tensor = aten::addcmul(%a, %filled, %d, %value)
  {ret}
"""


def _lerp_graph(value="1", dtype="", extra_output=False):
    """Dynamo's ``_foreach_lerp_`` polyfill for one tensor: ``addcmul(a, full_like(d, w),
    d)``; ``dtype`` the ``full_like`` dtype constant's attribute (``[value=7]``: float64)."""
    ret = "return (%out, %filled)" if extra_output else "return (%out)"
    text = _LERP.format(
        value=value,
        value_type="float" if "." in value else "int",
        dtype=dtype,
        dtype_type="int" if dtype else "NoneType",
        ret=ret,
    )
    return torch._C.parse_ir(text)


def test_a_product_with_a_filled_tensor_becomes_an_add_with_alpha():
    """The lerp of Adam's first moment as Dynamo traces it: no tensor filled per step."""
    a, d = torch.randn(64, 32), torch.randn(64, 32)
    graph = _lerp_graph()
    (unfolded,) = _run(graph.copy(), a, d)
    assert fold_filled_products(graph, _input_dtypes(graph, torch.float32)) == 1
    assert [k for k in _kinds(graph) if k != "prim::Constant"] == ["aten::add"]
    (folded,) = _run(graph, a, d)
    # the weight rounded to float32 either way; the reference in float64
    w = torch.tensor(0.1, dtype=torch.float32).double()
    reference = a.double() + w * d.double()
    torch.testing.assert_close(folded, reference.float())
    torch.testing.assert_close(folded, unfolded)


def _input_dtypes(graph, dtype_of_a, dtype_of_d=None) -> dict:
    """The dtypes the backend gives the pass (TorchScript's types say ``Tensor`` only)."""
    a, d = graph.inputs()
    return {a.unique(): dtype_of_a, d.unique(): dtype_of_d or dtype_of_a}


def test_a_filled_tensor_with_other_readers_or_another_dtype_or_factor_stays():
    float32 = torch.float32
    for graph, dtypes in (
        (_lerp_graph(extra_output=True), (float32,)),
        (_lerp_graph(value="0.5"), (float32,)),
        (_lerp_graph(dtype="[value=7]"), (float32,)),
        # integers: full_like truncates the weight 0.1 to 0 where add(alpha=0.1) would raise
        (_lerp_graph(), (torch.int64,)),
        # a wider a: the weight rounded to d's float32 by full_like, unrounded by add
        (_lerp_graph(), (torch.float64, float32)),
    ):
        assert fold_filled_products(graph, _input_dtypes(graph, *dtypes)) == 0
        assert "aten::full_like" in _kinds(graph)


def test_the_backend_folds_a_filled_product_in_a_graph_its_other_passes_rewrote(monkeypatch):
    """A compiled step on the lazy device (whose numbers are constants of the graph), with a
    transposed product the earlier passes rewrite (they destroy values: the dtypes are read
    before them): the filled product is folded and the results are eager's."""
    import lazygen.runtime as lr
    from lazygen.runtime.backends.torchscript import backend

    folded = []

    def counting(graph, dtypes):
        folded.append(fold_filled_products(graph, dtypes))
        return folded[-1]

    def step(a, d):
        return torch.addcmul(a, torch.full_like(d, 0.1), d), torch.mm(a, d.t()).t()

    monkeypatch.setattr(backend, "fold_filled_products", counting)
    torch._dynamo.reset()
    a, d = torch.randn(7, 5), torch.randn(7, 5)
    got = torch.compile(step, backend="lazygen")(a.to("lazygen"), d.to("lazygen"))
    lr.mark_step()
    assert sum(folded) == 1
    for expected, actual in zip(step(a, d), got, strict=True):
        torch.testing.assert_close(actual.cpu(), expected)
