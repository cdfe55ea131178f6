"""Eager's memory layouts in a capture: the sizes, strides and storage offsets eager would
give a value, where a lazy tensor (always contiguous) would give others. Ops that query
strides, read a storage or draw random numbers in memory order are traced with eager's
layout (``layout``, ``eager_layout``, ``on_eager_storage``), so a replay computes what
eager computes. Apart from ``capture.py``, which runs the graph; this module only answers
what eager's layout of a value is.
"""

from __future__ import annotations

import re

import torch
import torch.fx

from lazygen.runtime import LazygenRuntimeError

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def user_line(n: torch.fx.Node) -> str | None:
    """``file:line`` of the user's code that traced an FX node: the innermost frame of its
    ``stack_trace`` (Dynamo records the user's frames only)."""
    frames = _FRAME.findall(n.meta.get("stack_trace") or "")
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else None


def symbol_bindings(gm: torch.fx.GraphModule, args: list) -> dict:
    """The symbols of Dynamo's example values (a dynamic dimension's ``s0``, as a size or a
    stride of an argument or an int argument) -> this call's numbers, for ``layout``."""
    bindings = {}

    def bind(symbolic, concrete) -> None:
        if isinstance(symbolic, torch.SymInt) and symbolic.node.expr.is_Symbol:
            bindings[symbolic.node.expr] = concrete

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, arg in zip(placeholders, args, strict=False):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and isinstance(arg, torch.Tensor):
            sizes = (*val.shape, *val.stride())
            for symbolic, concrete in zip(sizes, (*arg.shape, *arg.stride()), strict=False):
                bind(symbolic, concrete)
            bind(val.storage_offset(), arg.storage_offset())
        elif isinstance(val, torch.SymInt) and type(arg) is int:
            bind(val, arg)
    return bindings


def concrete(n, bindings: dict):
    """An example value's int, or its ``SymInt``s (a list of them too) evaluated with
    ``bindings``; None when a symbol is not bound."""
    if type(n) is int:
        return n
    if isinstance(n, (list, tuple)):
        values = [concrete(v, bindings) for v in n]
        return None if None in values else type(n)(values)
    try:
        return int(n.node.expr.xreplace(bindings))
    except (TypeError, AttributeError):  # a symbol this call's arguments do not bind
        return None


#: Stride and offset queries in a graph with dynamic sizes (Longformer's ``_chunk`` reads
#: ``stride()`` for its ``as_strided``): answered with eager's layout from the example
#: values, as Dynamo bakes them in where sizes are static.
EAGER_STRIDE_QUERIES = frozenset(
    {
        torch.ops.aten.sym_stride.int,
        torch.ops.aten.sym_stride.default,
        torch.ops.aten.sym_storage_offset.default,
    }
)


def layout(val: torch.Tensor, bindings: dict) -> tuple | None:
    """``(sizes, strides, storage_offset)`` of an example value in eager for this call: its
    symbolic sizes evaluated with ``bindings`` (None when one is not bound)."""
    eager = (
        concrete(tuple(val.shape), bindings),
        concrete(tuple(val.stride()), bindings),
        concrete(val.storage_offset(), bindings),
    )
    return None if None in eager else eager


def permuted_random_input(n: torch.fx.Node, bindings: dict) -> list[int] | None:
    """For an elementwise random op (results of its first argument's shape) whose first
    argument is, in eager, a dense tensor laid out in another order than its dimensions
    (a transpose): the dimensions from outermost to innermost in memory. Eager draws the
    random numbers in memory order; lazy tensors are contiguous, so the op is traced on the
    permuted tensor (whose logical order is eager's memory order) and permuted back."""
    if not isinstance(n.target, torch._ops.OpOverload) or not n.args:
        return None
    if torch.Tag.nondeterministic_seeded not in n.target.tags:
        return None
    first = n.args[0]
    val = first.meta.get("val") if isinstance(first, torch.fx.Node) else None
    eager = layout(val, bindings) if isinstance(val, torch.Tensor) else None
    if eager is None or val.dim() < 2 or is_contiguous(*eager[:2]):
        return None
    sizes, strides, _ = eager
    outs = torch.utils._pytree.tree_leaves(n.meta.get("val"))
    if not outs or any(
        not isinstance(o, torch.Tensor) or (layout(o, bindings) or ((),))[0] != sizes for o in outs
    ):
        return None
    order = sorted(range(val.dim()), key=lambda d: (-strides[d], d))
    # dense: contiguous once its dimensions are put in memory order
    if not is_contiguous([sizes[d] for d in order], [strides[d] for d in order]):
        return None
    return order


def in_memory_order(target, args, kwargs, order: list[int]):
    inverse = sorted(range(len(order)), key=order.__getitem__)
    args = (args[0].permute(order), *args[1:])
    result = target(*args, **kwargs)
    return torch.utils._pytree.tree_map(
        lambda r: r.permute(inverse) if isinstance(r, torch.Tensor) else r, result
    )


_aten = torch.ops.aten


#: Ops whose sizes, strides and offset address their first argument's *storage*, as eager
#: lays it out, not its logical elements (``as_strided`` ignores its input's strides).
_STORAGE_READERS = frozenset(
    {_aten.as_strided.default, _aten.as_strided_copy.default, _aten.as_strided_scatter.default}
)


def is_contiguous(sizes, strides) -> bool:
    expected = 1
    for size, stride in zip(reversed(sizes), reversed(strides), strict=True):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def eager_layout(n: torch.fx.Node, bindings: dict) -> tuple | None:
    """For a storage-reading op whose first argument is, in eager, not a contiguous tensor
    at offset 0 (a transpose, a slice, a view of one: aot_autograd's graphs keep views as
    views), that argument's ``(sizes, strides, storage_offset)``. Lazy tensors hold their
    logical elements contiguously, so the op's strides would address other elements
    (Longformer's sliding-window chunks: ``as_strided`` of a view of a transpose)."""
    if n.target not in _STORAGE_READERS or not n.args:
        return None
    first = n.args[0]
    val = first.meta.get("val") if isinstance(first, torch.fx.Node) else None
    eager = layout(val, bindings) if isinstance(val, torch.Tensor) else None
    if eager is None:
        return None
    sizes, strides, offset = eager
    if (offset == 0 and is_contiguous(sizes, strides)) or 0 in sizes:
        return None
    return eager


def storage_extent(sizes, strides, offset: int) -> int:
    """One past the last storage position a strided view reaches."""
    if 0 in sizes:
        return 0
    return (
        offset + sum((size - 1) * stride for size, stride in zip(sizes, strides, strict=True)) + 1
    )


def _strided_arguments(target, args, kwargs, offset: int) -> tuple:
    """``(size, stride, storage_offset)`` of an ``as_strided*`` call, its input's offset
    when none is given (eager's default), and the arguments before them."""
    head = 2 if target is _aten.as_strided_scatter.default else 1
    size, stride = args[head], args[head + 1]
    given = args[head + 2] if len(args) > head + 2 else kwargs.get("storage_offset")
    return args[:head], size, stride, offset if given is None else given


def _check_reads_within(target, layout, size, stride, storage_offset, extent, line) -> None:
    """Every storage position the op reads must be one of its input's elements: the rest
    of eager's storage (a base's elements a slice leaves out) is in no tensor of the graph."""
    if target is _aten.as_strided_scatter.default:
        return  # it reads back the input's own positions
    sizes, strides, offset = layout
    held = torch.zeros(extent, dtype=torch.bool)
    held.as_strided(sizes, strides, offset).fill_(True)
    if not bool(held.as_strided(size, stride, storage_offset).all()):
        raise LazygenRuntimeError(
            f"lazygen: {target} at {line or 'an unknown line'} reads storage its input "
            f"(sizes {list(sizes)}, strides {list(strides)}, offset {offset}) does not "
            "hold: the elements of its base tensor outside that view. lazygen cannot "
            "compile that (the graph runs eagerly); call it on the base tensor instead."
        )


def on_eager_storage(target, args, kwargs, layout, line=None):
    """Run a storage-reading op on eager's storage, rebuilt from the input's elements at
    the positions eager's layout gives them."""
    sizes, strides, offset = layout
    head, size, stride, storage_offset = _strided_arguments(target, args, kwargs, offset)
    x = head[0]
    extent = max(
        storage_extent(sizes, strides, offset), storage_extent(size, stride, storage_offset)
    )
    _check_reads_within(target, layout, size, stride, storage_offset, extent, line)
    storage = torch.as_strided_scatter(x.new_zeros(extent), x, sizes, strides, offset)
    if target is _aten.as_strided_scatter.default:
        written = target(storage, head[1], size, stride, storage_offset)
        return _aten.as_strided_copy.default(written, sizes, strides, offset)
    return target(storage, size, stride, storage_offset)
