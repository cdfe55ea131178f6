"""One cheap meta check per in-place ``_foreach_*`` op, instead of one Python meta kernel
per tensor.

Functionalization runs every in-place op on meta tensors before turning it into its
functional form (that is how ``a.add_(b)`` learns that ``b`` may not broadcast ``a`` to a
bigger shape). In-place foreach ops have no meta kernel of their own: their composite
kernel loops over the list, and for ``addcdiv_``, ``addcmul_`` and ``lerp_`` each element
reaches a Python meta kernel (``torch._meta_registrations``). Adam and AdamW call those on
every parameter each step, a large share of a small decoder's AdamW training step on the
lazy device (docs/benchmarks.md, "Measurements behind the code").

The kernel registered here settles the common case in one pass: every list holds, per
position, tensors of one floating dtype and one shape, and every scalar is real. Such an
element op cannot fail its meta check (same shape: nothing broadcasts; same floating dtype:
nothing is cast). Anything else (mixed dtypes, broadcasting, complex or integer tensors,
empty lists) runs the composite kernel exactly as before, so every error eager would raise
is still raised.
"""

from __future__ import annotations

import torch

from .. import state
from ..dispatch.decompositions import COMPOSITE
from ..op_registry import base_name, library_name, overload_name

aten = torch.ops.aten
_KEY = torch._C.DispatchKey

#: Element ops whose in-place foreach forms optimizers call (and their neighbours).
FAMILY = (
    "abs",
    "add",
    "addcdiv",
    "addcmul",
    "clamp_max",
    "clamp_min",
    "copy",
    "div",
    "exp",
    "lerp",
    "maximum",
    "minimum",
    "mul",
    "neg",
    "pow",
    "reciprocal",
    "sign",
    "sqrt",
    "sub",
    "zero",
)


def _plain_scalar(value) -> bool:
    return type(value) in (float, int, bool)


def _classify(op) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """Positions of (tensor lists, scalars, scalar lists) in ``op``'s positional arguments,
    or None when ``op`` takes anything else (a lone tensor of scalars, a dtype, ...)."""
    lists, scalars, scalar_lists = [], [], []
    for i, argument in enumerate(op._schema.arguments):
        text = str(argument.type)
        if text == "List[Tensor]":
            lists.append(i)
        elif text in ("number", "bool"):  # Scalar, and copy_'s non_blocking
            scalars.append(i)
        elif text == "List[number]":
            scalar_lists.append(i)
        else:
            return None
    return tuple(lists), tuple(scalars), tuple(scalar_lists)


def _meta_kernel(op, lists: tuple[int, ...], scalars: tuple[int, ...], scalar_lists):
    names = [a.name for a in op._schema.arguments]
    defaults = [a.default_value if a.has_default_value() else None for a in op._schema.arguments]

    def settled(args, kwargs) -> bool:
        values = list(args) + [
            kwargs.get(n, d) for n, d in zip(names[len(args) :], defaults[len(args) :], strict=True)
        ]
        first = values[lists[0]]
        size = len(first)
        if size == 0:
            return False
        others = [values[i] for i in lists[1:]]
        if any(len(other) != size for other in others):
            return False
        if not all(_plain_scalar(values[i]) for i in scalars):
            return False
        for i in scalar_lists:
            if len(values[i]) != size or not all(_plain_scalar(v) for v in values[i]):
                return False
        for position, tensor in enumerate(first):
            dtype, shape = tensor.dtype, tensor.shape
            if not dtype.is_floating_point or not tensor.is_contiguous():
                return False
            for other in others:
                element = other[position]
                if element.dtype != dtype or element.shape != shape:
                    return False
        return True

    def kernel(*args, **kwargs):
        if not settled(args, kwargs):
            return op.redispatch(COMPOSITE, *args, **kwargs)
        return None

    kernel.__name__ = f"meta_{base_name(op)}_{overload_name(op)}"
    return kernel


@state.process_memo  # must not change once register() added the meta kernels
def overloads() -> tuple:
    """``(op, argument positions)`` of the in-place foreach overloads this module gives a
    meta kernel: those of ``FAMILY`` with no meta kernel of their own, a composite one, and
    only lists and scalars. Computed once, before ``register`` adds the meta kernels."""
    return tuple(_uncovered())


def _uncovered():
    for name in FAMILY:
        packet = getattr(aten, f"_foreach_{name}_", None)
        if packet is None:
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if op.has_kernel_for_dispatch_key(_KEY.Meta) or op.has_kernel_for_dispatch_key(
                _KEY.PrivateUse1
            ):
                continue
            if not op.has_kernel_for_dispatch_key(_KEY.CompositeExplicitAutograd):
                continue
            positions = _classify(op)
            if positions is None or not positions[0]:
                continue
            yield op, positions


def register() -> torch.library.Library:
    library = torch.library.Library("aten", "IMPL")
    for op, (lists, scalars, scalar_lists) in overloads():
        library.impl(library_name(op), _meta_kernel(op, lists, scalars, scalar_lists), "Meta")
    return library
