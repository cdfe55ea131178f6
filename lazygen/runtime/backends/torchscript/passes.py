"""Rewrites of a lowered TorchScript graph before it is compiled.

The graph executor runs unoptimised (see backend._unoptimized), so the few rewrites that pay
off for lazy graphs live here, each a pure function of the graph.
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from ... import state


def transpose_products(graph: torch._C.Graph) -> int:
    """Compute ``t(mm(a, b))`` as ``mm(t(b), t(a))``, contiguous.

    Autograd computes a ``Linear`` weight's gradient as the transpose of a product, a
    non-contiguous result that every later elementwise op (momentum, the update) then reads
    with a stride across rows, several times slower than on a contiguous one
    (docs/benchmarks.md, "Measurements behind the code"). Eager pays a copy for this in ``AccumulateGrad``; the swapped product is contiguous
    at no cost (transposed operands only flip BLAS flags).

    The product itself may be a graph output too (the gradient view's base is a live
    tensor): it is then returned as ``t`` of the swapped product, a strided view that is
    copied only if someone reads it. Products with other uses are left alone. A swapped
    operand that was itself a transpose becomes ``t(t(x))``, which
    ``fold_double_transposes`` (run after this pass) reads as ``x``. Returns the number of
    rewrites.
    """
    rewrites = 0
    for node in list(graph.nodes()):
        if node.kind() != "aten::t":
            continue
        product = node.input().node()
        if product.kind() != "aten::mm":
            continue
        others = [use.user for use in product.output().uses() if use.user != node]
        if not all(user.kind() in _OUTPUT_KINDS for user in others):
            continue
        a, b = product.inputs()
        swapped = [_transpose(graph, b, node), _transpose(graph, a, node)]
        mm = graph.create("aten::mm", swapped, 1)
        mm.insertBefore(node)
        mm.output().setType(node.output().type())
        if others:
            product.output().replaceAllUsesWith(_transpose(graph, mm.output(), node))
        node.output().replaceAllUsesWith(mm.output())
        node.destroy()
        product.destroy()
        rewrites += 1
    return rewrites


def fold_double_transposes(graph: torch._C.Graph) -> int:
    """Read ``t(t(x))`` as ``x`` (the same view: sizes and strides), and drop the
    transposes nothing reads any more. The backward of a ``Linear`` transposes the
    forward's transposed weight, and ``transpose_products`` transposes transposed
    operands: each is one interpreter instruction per run. Returns the number folded."""
    folded = 0
    for node in list(graph.nodes()):
        if node.kind() == "aten::t" and node.input().node().kind() == "aten::t":
            node.output().replaceAllUsesWith(node.input().node().input())
            folded += 1
    if folded:
        _drop_unused_transposes(graph)
    return folded


def _drop_unused_transposes(graph: torch._C.Graph) -> None:
    """Destroy the ``t`` nodes nothing reads, last first so that a chain goes whole."""
    for node in reversed(list(graph.nodes())):
        if node.kind() == "aten::t" and not node.output().uses():
            node.destroy()


def fold_filled_products(graph: torch._C.Graph, dtypes: dict) -> int:
    """Compute ``addcmul(a, full_like(d, w), d)`` as ``add(a, d, alpha=w)``.

    Dynamo traces ``torch._foreach_lerp_`` with a number weight (Adam's and AdamW's first
    moment) as a tensor filled with the weight per parameter, multiplied into the
    difference (its polyfill, written for fused multiply-adds): one allocation and one fill
    per parameter and step that ``add``'s ``alpha`` does without. Only where the filled
    tensor has no other reader, takes ``d``'s dtype (no ``dtype`` argument), ``addcmul``'s
    own factor is 1 and ``a`` and ``d`` have one floating dtype (``dtypes``: a value's
    ``unique()`` -> its dtype; an unknown one is not folded), so that the weight is rounded
    to that dtype either way: an integer ``d`` truncates a float weight where ``add``
    would refuse it, and ``a`` of a wider dtype would take the weight unrounded. Returns
    the number folded."""
    folded = 0
    for node in list(graph.nodes()):
        if node.kind() != "aten::addcmul":
            continue
        base, filled, other, value = node.inputs()
        fill = filled.node()
        if fill.kind() != "aten::full_like" or len(filled.uses()) != 1:
            continue
        source, weight, dtype = list(fill.inputs())[:3]
        if (
            source.unique() != other.unique()
            or _constant(value) != 1
            or _constant(dtype, None) is not None
        ):
            continue
        if weight.node().kind() != "prim::Constant":
            continue
        dtype_of_d = dtypes.get(other.unique())
        if dtype_of_d is None or not dtype_of_d.is_floating_point:
            continue
        if dtypes.get(base.unique()) != dtype_of_d:
            continue
        add = graph.create("aten::add", [base, other, weight], 1)
        add.insertBefore(node)
        add.output().setType(node.output().type())
        node.output().replaceAllUsesWith(add.output())
        node.destroy()
        fill.destroy()
        folded += 1
    return folded


def share_number_operands(graph: torch._C.Graph, dtypes: dict, device: torch.device) -> int:
    """Give ``add``/``sub``/``rsub``/``mul``/``div`` by a constant number, and ``pow`` of a constant
    number, that number as one 0-dim tensor of the op's dtype, made once per run.

    An op given a Python number wraps it at every call into a 0-dim float64 (or int64)
    tensor that type promotion then copies to the op's dtype (``aten::to``): two
    allocations and a copy per op. An optimizer step is mostly such ops on small tensors
    (AdamW: about ten per parameter: decay, betas, bias corrections, eps), about a
    millisecond of a small GPT-2 step on the CPU (docs/benchmarks.md). One ``aten::scalar_tensor`` per
    distinct number and dtype serves every op that reads it.

    Only on the CPU and where the other operand's dtype (``dtypes``, by ``unique()``) is
    float32 or float64: promotion then keeps that dtype, the kernels compute in it, and the
    number is rounded to it either way, so the results are the same bits. (Half and
    bfloat16 kernels compute with the number unrounded, and CUDA reads a wrapped number as
    a kernel argument.) Returns the number of operands replaced."""
    if device.type != "cpu":
        return 0
    shared: dict = {}
    replaced = 0
    for node in list(graph.nodes()):
        position, arity = _NUMBER_OPERAND.get(node.kind(), (0, -1))
        if node.inputsSize() != arity:  # not one of them, or another overload (a mode)
            continue
        inputs = list(node.inputs())
        number, other = inputs[position], inputs[1 - position]
        if number.node().kind() != "prim::Constant" or number.type() not in _NUMBER_TYPES:
            continue
        dtype = dtypes.get(other.unique())
        if dtype not in _EXACT_DTYPES or other.type().kind() != "TensorType":
            continue
        tensor = shared.get((number.unique(), dtype))
        if tensor is None:
            tensor = shared[(number.unique(), dtype)] = _scalar_tensor(graph, number, dtype, device)
        node.replaceInput(position, tensor)
        replaced += 1
    return replaced


# The ops whose number argument is wrapped into a tensor: (its position, their arity).
_NUMBER_OPERAND = MappingProxyType(
    {
        "aten::add": (1, 3),
        "aten::sub": (1, 3),
        "aten::rsub": (1, 3),  # the compile route's ``1 - beta ** step``
        "aten::mul": (1, 2),
        "aten::div": (1, 2),
        "aten::pow": (0, 2),
    }
)
_NUMBER_TYPES = (torch._C.FloatType.get(), torch._C.IntType.get())
_EXACT_DTYPES = (torch.float32, torch.float64)


def _scalar_tensor(graph, number: torch._C.Value, dtype, device) -> torch._C.Value:
    """``aten::scalar_tensor(number, dtype, device=device)``, placed after ``number``'s
    constant (which precedes all its readers)."""
    after = number.node()
    graph.setInsertPoint(after)  # the constants go before it
    none = graph.insertConstant(None)
    arguments = [number, graph.insertConstant(dtype), none, graph.insertConstant(device), none]
    node = graph.create("aten::scalar_tensor", arguments, 1)
    node.output().setType(torch._C.TensorType.get())
    node.insertAfter(after)
    graph.setInsertPoint(graph.return_node())  # appending again, as after lowering
    return node.output()


_ABSENT = object()


def _constant(value: torch._C.Value, absent=_ABSENT):
    """A constant input's value (``absent`` for ``None``), or ``_ABSENT`` when the input is
    not a constant."""
    node = value.node()
    if node.kind() != "prim::Constant":
        return _ABSENT
    constant = value.toIValue()
    return absent if constant is None else constant


def write_in_place(graph: torch._C.Graph, writes: list[torch._C.Node]) -> int:
    """Compute a written input's new value straight into the input: ``copy_(arg, add(a,
    b))`` becomes ``add.out(a, b, out=arg)``.

    ``writes`` are the ``aten::copy_`` nodes of the graph's ``ir.InputWrite``s whose value
    has its input's dtype (so that the out variant computes exactly what the copy would
    store). An optimizer step ends in one pointwise op per parameter and state; written by
    the op itself, the step allocates no new buffers and runs no copies, as eager's
    in-place update does. Rewritten only where that is the same by construction:

    * the value is made by a single-result pointwise op (``Tag.pointwise``, not random)
      with an out variant: out may then be one of its operands (identical elements), and
      the input's sizes are the value's (an ``InputWrite``'s contract);
    * the value is not a graph result (it would be the caller's own tensor);
    * nothing reads the input's old value after that op: the copy ran after every node,
      the op runs where it stands. (An input written in a graph is read by no op that may
      alias it, so no view of it exists; aot_autograd never feeds inputs that alias a
      mutated one.)

    Later readers of the value read the input, which holds it from then on. Returns the
    number of rewrites."""
    rewrites = 0
    for copy in writes:
        target, value, _ = copy.inputs()
        producer = value.node()
        if target.node().kind() != "prim::Param":
            continue
        out_schema = _out_variant(producer)
        if out_schema is None:
            continue
        if any(use.user.kind() in _OUTPUT_KINDS for use in value.uses()):
            continue
        if any(
            use.user != copy and use.user != producer and not use.user.isBefore(producer)
            for use in target.uses()
        ):
            continue
        written = graph.create(producer.kind(), [*producer.inputs(), target], 1)
        written.insertBefore(producer)
        written.output().setType(value.type())
        if written.schema() != out_schema:  # TorchScript matched another overload
            written.destroy()
            continue
        copy.destroy()
        value.replaceAllUsesWith(written.output())
        producer.destroy()
        rewrites += 1
    return rewrites


def _out_variant(node: torch._C.Node) -> str | None:
    """The schema of the out variant of ``node``'s op, if the op is a deterministic
    pointwise aten op with one result; else None."""
    if not node.kind().startswith("aten::") or node.outputsSize() != 1:
        return None
    try:
        schema = node.schema()
    except RuntimeError:  # no schema matched (not an operator TorchScript knows)
        return None
    return _out_schema_of(schema)


@state.memo
def _out_schema_of(schema: str) -> str | None:
    parsed = torch._C.parse_schema(schema)
    if len(parsed.returns) != 1 or any(a.is_out for a in parsed.arguments):
        return None
    packet = getattr(torch.ops.aten, parsed.name[len("aten::") :], None)
    overload = getattr(packet, parsed.overload_name or "default", None)
    tags = getattr(overload, "tags", ())
    if torch.Tag.pointwise not in tags or torch.Tag.nondeterministic_seeded in tags:
        return None
    inputs = [(a.name, str(a.type)) for a in parsed.arguments]
    for candidate in torch._C._jit_get_schemas_for_operator(parsed.name):
        *others, last = candidate.arguments
        if last.is_out and [(a.name, str(a.type)) for a in others] == inputs:
            return str(candidate)
    return None


# Where a graph's results are gathered: uses that only hand the value back to the caller.
_OUTPUT_KINDS = frozenset({"prim::TupleConstruct", "prim::Return"})


def _transpose(graph: torch._C.Graph, value: torch._C.Value, before: torch._C.Node):
    transpose = graph.create("aten::t", [value], 1)
    transpose.insertBefore(before)
    return transpose.output()
