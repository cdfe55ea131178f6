"""Hand-written lowerings and reuse checks."""


def lower_scalar(node, ctx):
    return [ctx.constant(node.attrs[0])]


def can_be_reused_scalar(node, operands, attrs):
    return node.attrs == attrs


def lower_cast(node, ctx):
    (input_,) = node.operands
    return ctx.call("aten::to.dtype", [ctx.tensor(input_), ctx.constant(node.attrs[0])], {}, 1)
