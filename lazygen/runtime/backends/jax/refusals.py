"""What the jax backend refuses to run in a graph (``Backend.refused_ops``), and why.

* Every op of the built-in list whose IR node lowers to an aten overload the op table
  (``ops.JAX_OPS``) has no implementation for: it runs eagerly on the data's host view,
  counted as refused in ``metrics.fallback_report()``.
* Calls whose torch semantics JAX does not give: integer division, remainder and powers by
  a tensor, a zero or a negative exponent (torch raises on a zero divisor or a negative
  integer exponent, XLA returns a number); by other numbers they lower.
* Random integers (``random_(from, to)``) with bounds torch rejects, or without an upper
  bound.
* Calls whose ``dtype`` argument names a dtype JAX lacks (``complex32``, the float8
  types): they run eagerly and their result's upload raises the user's error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import MappingProxyType

import torch

from ...backend_interface import KernelTables
from ...op_registry import overload_name, overload_of, table_key
from .dtypes import SUPPORTED

aten = torch.ops.aten

#: Ops whose integer form differs from torch's on invalid input (see the docstring).
INTEGER_REFUSED = ("div.Tensor_mode", "div.Scalar_mode", "remainder", "fmod", "pow")


def _tensors(args, kwargs):
    for a in (*args, *kwargs.values()):
        if isinstance(a, torch.Tensor):
            yield a
        elif type(a) in (list, tuple):
            yield from (t for t in a if isinstance(t, torch.Tensor))


def _integer_call(op, args, kwargs) -> bool:
    """An integer division, remainder or power that may meet what torch raises for: a zero
    divisor (a tensor, which may hold one, or the number 0), a negative exponent (a tensor,
    or a negative number). ``x // 4``, ``i % n``, ``k ** 2`` with numbers lower."""
    if all(t.is_floating_point() or t.is_complex() for t in _tensors(args, kwargs)):
        return False
    packet = op.overloadpacket
    if packet is aten.div and kwargs.get("rounding_mode") is None:
        return False  # true division: a float result, inf for a zero divisor, as torch
    operand = args[1] if len(args) > 1 else None
    if isinstance(operand, torch.Tensor) or not isinstance(operand, (int, float, bool)):
        return True
    return operand < 0 if packet is aten.pow else operand == 0


def _unsupported_dtype(op, args, kwargs) -> bool:
    """A call asking for a result dtype JAX lacks (``x.chalf()``): run eagerly, where its
    result's upload raises the user's error (``dtypes.check_supported``)."""
    dtype = kwargs.get("dtype")
    if dtype is None:
        dtype = next((a for a in args if isinstance(a, torch.dtype)), None)
    return dtype is not None and dtype not in SUPPORTED


def _dtype_argument(overload) -> bool:
    return any(a.name == "dtype" for a in overload._schema.arguments)


def _random_bounds(op, args, kwargs) -> bool:
    """``random_(from, to)`` calls run eagerly unless their bounds are valid for the dtype:
    torch raises for ``from >= to`` and bounds out of the dtype's range (``2**digits`` for
    floating types), where ``jax.random.randint`` would return numbers. ``random_(from)``
    without ``to`` (up to the dtype's largest value) too: an exclusive int64 bound cannot
    reach it."""
    if overload_name(op) == "to":
        low, high = 0, args[1] if len(args) > 1 else kwargs["to"]
    else:
        low, high = args[1], args[2] if len(args) > 2 else kwargs.get("to")
    if high is None or low >= high:
        return True
    dtype = args[0].dtype
    if dtype == torch.bool:
        least, most = 0, 1
    elif dtype.is_floating_point:
        most = 2 ** (1 - round(math.log2(torch.finfo(dtype).eps)))  # 2**digits
        least = -most
    else:
        least, most = torch.iinfo(dtype).min, torch.iinfo(dtype).max
    return low < least or high - 1 > most


def _masks(indices) -> list:
    return [i for i in indices if i is not None and i.dtype in (torch.bool, torch.uint8)]


def _masked_index(op, args, kwargs) -> bool:
    """An index by a boolean mask: its result's sizes are the mask's count of True."""
    return bool(_masks(args[1]))


def _masked_put(op, args, kwargs) -> bool:
    """A write through a boolean mask, unless it is one mask over leading dimensions and
    values that broadcast over the rest (``x[mask] = 0``: a ``where``); other writes take
    as many values as the mask has True, known only from the data."""
    x, indices, values = args[0], args[1], args[2]
    masks = _masks(indices)
    if not masks:
        return False
    if len(indices) != 1 or masks[0].dtype != torch.bool:
        return True
    return values.dim() > x.dim() - masks[0].dim()


def _beyond_input(op, args, kwargs) -> bool:
    """An ``as_strided`` view reaching past its input's elements: in eager, the storage of a
    view may be larger than the view (a base's), but a lazy value's storage is itself, so
    such a call runs eagerly and raises torch's out-of-bounds error as every backend's."""
    x, size, stride = args[0], args[1], args[2]
    offset = (args[3] if len(args) > 3 else kwargs.get("storage_offset")) or 0
    if any(s == 0 for s in size):
        return False
    return offset + sum((s - 1) * st for s, st in zip(size, stride, strict=False)) >= x.numel()


#: Calls refused by a predicate of their own: the table lowers the op's other calls.
PREDICATES = MappingProxyType(
    {
        "as_strided": _beyond_input,
        "as_strided_copy": _beyond_input,
        "index.Tensor": _masked_index,
        "_unsafe_index.Tensor": _masked_index,
        "index_put": _masked_put,
        "_unsafe_index_put": _masked_put,
        "linalg_lu_factor_ex": lambda op, a, k: not k.get("pivot", True),  # CPU raises
        "linalg_lu": lambda op, a, k: not k.get("pivot", True),
        "random.from": _random_bounds,
        "random.to": _random_bounds,
    }
)


def node_op_key(cls) -> str | None:
    """The table key of the aten overload a generated IR node class lowers to
    (``op_kind`` ``aten::add`` and ``op_name`` ``add.Tensor`` -> ``add.Tensor``)."""
    overload = overload_of(cls)
    if overload is None or overload.namespace != "aten":
        return None
    return table_key(overload)


def call_predicate(overload):
    """The predicate refusing some calls of ``overload``, an op the table has, or None."""
    key = table_key(overload)
    if key.startswith(INTEGER_REFUSED) or key.partition(".")[0] in INTEGER_REFUSED:
        return _integer_call
    if key in PREDICATES:
        return PREDICATES[key]
    if _dtype_argument(overload):
        return _unsupported_dtype
    return None


def call_refused(overload, args, kwargs) -> bool:
    """Whether the backend refuses this call of ``overload`` (an op the table has): for the
    ops of a decomposition (``decomposed.py``)."""
    predicate = call_predicate(overload)
    return predicate is not None and predicate(overload, args, kwargs)


def refused_ops(tables: KernelTables, ops: dict[str, Callable], decompositions) -> dict:
    """``refused_ops()``'s mapping for these kernel tables, op table and ``decompositions``
    (``decomposed.Decompositions``: a call of an op the table lacks whose formula lowers is
    not refused)."""
    refused: dict = {}
    lacking = set()
    for cls in tables.node_classes.values():
        key = node_op_key(cls)
        if key is not None and key not in ops:
            lacking.add(key)
    for overload in tables.kernels:
        if not isinstance(overload, torch._ops.OpOverload):
            continue
        if overload.namespace != "aten":
            continue
        key = table_key(overload)
        if key in lacking:
            refused[overload] = decompositions.refuses if overload in decompositions else None
        elif (predicate := call_predicate(overload)) is not None:
            refused[overload] = predicate
    return refused
