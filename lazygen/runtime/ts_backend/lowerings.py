"""Hand-written lowerings ``lower_<snake name>(node, ctx) -> list[torch._C.Value]`` for nodes
whose lowering is not generated (``LowerDeclOnly``, non-native ``ltc_*`` ops)."""

from __future__ import annotations


def lower_to_copy(node, ctx) -> list:
    """``_to_copy`` within the lazy device: a dtype conversion on the backing device."""
    (self_,) = node.operands
    (dtype,) = node.attrs
    none = ctx.constant(None)
    return ctx.call(
        "aten::_to_copy",
        [ctx.tensor(self_), ctx.constant(dtype), none, none, none, ctx.constant(False), none],
        1,
    )
