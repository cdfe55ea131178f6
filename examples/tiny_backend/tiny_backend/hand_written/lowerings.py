"""Lowerings of nodes whose ``lower()`` is hand-written (non-native ops)."""

from __future__ import annotations


def lower_fused_silu(node, ctx) -> list:
    (input_,) = node.operands
    return ctx.call("tiny::silu", [ctx.tensor(input_)], {}, 1)
