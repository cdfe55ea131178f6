"""Hand-written lowerings ``lower_<snake name>(node, ctx) -> list`` for nodes whose lowering
is not generated (``LowerDeclOnly``, non-native ``ltc_*`` ops). They speak only the
``LoweringContext`` interface, so every backend sharing this op list uses them."""

from __future__ import annotations

# Non-native view ops (LTC's ltc_* opkinds). The runtime traces functional ops, so these
# only run when a backend chooses to build them; semantics follow their schemas.


def _none(ctx):
    return ctx.constant(None)


def _view(ctx, kind: str, value, *attrs):
    """The view op `kind` of `value` with constant arguments `attrs`."""
    (view,) = ctx.call(kind, [value, *(ctx.constant(a) for a in attrs)], {}, 1)
    return view


def _written_into_copy(ctx, target, source, view_of) -> list:
    """A `*_view_update`: a copy of `target` with `source` written into `view_of(copy)`."""
    (clone,) = ctx.call("aten::clone", [ctx.tensor(target)], {"memory_format": _none(ctx)}, 1)
    ctx.call("aten::copy_", [view_of(clone), ctx.tensor(source), ctx.constant(False)], {}, 1)
    return [clone]


def lower_as_strided(node, ctx) -> list:
    (input_,) = node.operands
    return [_view(ctx, "aten::as_strided", ctx.tensor(input_), *node.attrs)]


def lower_as_strided_view_update(node, ctx) -> list:
    target, input_ = node.operands
    return _written_into_copy(
        ctx, target, input_, lambda clone: _view(ctx, "aten::as_strided", clone, *node.attrs)
    )


def lower_cast(node, ctx) -> list:
    (input_,) = node.operands
    dtype, _ = node.attrs
    none = _none(ctx)
    options = {"dtype": ctx.constant(dtype), "layout": none, "device": none}
    options |= {"pin_memory": none, "non_blocking": ctx.constant(False), "memory_format": none}
    return ctx.call("aten::_to_copy", [ctx.tensor(input_)], options, 1)


def lower_diagonal_view_update(node, ctx) -> list:
    target, input_ = node.operands
    return _written_into_copy(
        ctx, target, input_, lambda clone: _view(ctx, "aten::diagonal", clone, *node.attrs)
    )


def _narrowed(ctx, value, base_indices, sizes):
    for dim, (start, length) in enumerate(zip(base_indices, sizes, strict=True)):
        value = _view(ctx, "aten::narrow", value, dim, start, length)
    return value


def lower_narrow(node, ctx) -> list:
    (input_,) = node.operands
    base_indices, sizes = node.attrs
    return [_narrowed(ctx, ctx.tensor(input_), base_indices, sizes)]


def lower_narrow_view_update(node, ctx) -> list:
    input_, source = node.operands
    (base_indices,) = node.attrs
    sizes = source.node.shapes[source.index].sizes
    return _written_into_copy(
        ctx, input_, source, lambda clone: _narrowed(ctx, clone, base_indices, sizes)
    )


def lower_resize(node, ctx) -> list:
    (input_,) = node.operands
    (size,) = node.attrs
    (clone,) = ctx.call("aten::clone", [ctx.tensor(input_)], {"memory_format": _none(ctx)}, 1)
    return ctx.call("aten::resize_", [clone, ctx.constant(size)], {"memory_format": _none(ctx)}, 1)


def lower_scalar(node, ctx) -> list:
    (value,) = node.operands
    (dtype,) = node.attrs
    none = _none(ctx)
    scalar = ctx.scalar(value) if value is not None else ctx.constant(0)
    options = {"dtype": ctx.constant(dtype), "layout": none}
    options |= {"device": ctx.constant(ctx.device), "pin_memory": none}
    return ctx.call("aten::scalar_tensor", [scalar], options, 1)


def can_be_reused_scalar(node, operands, attrs) -> bool:
    """Wrapped scalars are graph inputs, so equal attrs suffice; the value is data."""
    return node.attrs == attrs and len(node.operands) == len(operands)


def lower_select(node, ctx) -> list:
    (input_,) = node.operands
    return [_view(ctx, "aten::slice.Tensor", ctx.tensor(input_), *node.attrs)]


def lower_select_view_update(node, ctx) -> list:
    target, source = node.operands
    return _written_into_copy(
        ctx, target, source, lambda clone: _view(ctx, "aten::slice.Tensor", clone, *node.attrs)
    )
