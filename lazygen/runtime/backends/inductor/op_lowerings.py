"""How the ``inductor`` backend lowers some ops differently from the ``fx`` backend's
``FXLoweringContext``: ``add``/``sub`` with ``alpha`` (kept data, not a constant) and the view
copies (as the views they copy, which Inductor fuses)."""

from __future__ import annotations

import operator
from types import MappingProxyType

import torch

from ... import op_registry
from ...lowering_context import op_string, overload_of, view_of
from ...op_registry import base_name
from ..fx.lowering import IR_NODE, FXLoweringContext, OpLowering


def lower_alpha(ctx: FXLoweringContext, op: str, args: list, kwargs: dict, num_outputs: int):
    """``add``/``sub`` with ``alpha`` as ``op(self, other * alpha)``: Inductor's lowering of
    ``add.Tensor`` branches on ``alpha == 1``, which would compile a changing ``alpha`` (SGD's
    ``-lr`` under a schedule) in as a constant; its lowering of ``add.Scalar`` takes no
    ``alpha`` at all. Eager computes ``alpha * other`` in the op's dtype too."""
    self_, other, *rest = args
    alpha = rest[0] if rest else kwargs.get("alpha", 1)
    if not (type(alpha) is int and alpha == 1):
        if op.endswith(".Scalar"):  # other is a number
            other = ctx.graph.call_function(operator.mul, (other, alpha))
        else:
            other = ctx.graph.call_function(torch.ops.aten.mul.Scalar, (other, alpha))
    node = ctx.graph.call_function(overload_of(op), (self_, other))
    if ctx.node is not None:
        node.meta[IR_NODE] = ctx.node
    return [node]


def _view_copy_overloads() -> list[str]:
    """Every functional overload of the view copies (op fact ``view_copies``) that has a view (``view_of``)."""
    names = []
    for packet in sorted(op_registry.get("view_copies"), key=base_name):
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if view_of(op) is not None:
                names.append(op_string(op))
    return names


def lower_as_view(ctx: FXLoweringContext, op: str, args: list, kwargs: dict, num_outputs: int):
    """A view copy as the view it copies (``view_of``; the lowering contract lets a backend
    do so: "Views may alias"). Given to Inductor as copies, some had neither a lowering nor
    a decomposition and were extern calls no kernel fused with (a decoder step: 30
    ``select_copy``; Llama's: 21 ``slice_copy``), and the others decomposed into a view
    and a ``clone``, a kernel materialising each (a decoder step: 8 kernels doing only
    ``t_copy``). ``view_copy`` becomes ``reshape``: eager's ``view_copy`` accepts any layout
    (it copies), while a ``view`` fails on the strided outputs of some fused kernels (the
    CPU flash-attention backward's gradients)."""
    node = ctx.graph.call_function(view_of(op), tuple(args), kwargs)
    if ctx.node is not None:
        node.meta[IR_NODE] = ctx.node
    return [node]


#: Ops Inductor needs lowered differently from their eager form.
INDUCTOR_LOWERINGS: dict[str, OpLowering] = MappingProxyType(
    {
        **dict.fromkeys(_view_copy_overloads(), lower_as_view),
        "aten::add.Scalar": lower_alpha,
        "aten::sub.Scalar": lower_alpha,
        "aten::add.Tensor": lower_alpha,
        "aten::sub.Tensor": lower_alpha,
    }
)
