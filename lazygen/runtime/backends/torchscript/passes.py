"""Rewrites of a lowered TorchScript graph before it is compiled.

The graph executor runs unoptimised (see backend._unoptimized), so the few rewrites that pay
off for lazy graphs live here, each a pure function of the graph.
"""

from __future__ import annotations

import torch


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


# Where a graph's results are gathered: uses that only hand the value back to the caller.
_OUTPUT_KINDS = frozenset({"prim::TupleConstruct", "prim::Return"})


def _transpose(graph: torch._C.Graph, value: torch._C.Value, before: torch._C.Node):
    transpose = graph.create("aten::t", [value], 1)
    transpose.insertBefore(before)
    return transpose.output()
