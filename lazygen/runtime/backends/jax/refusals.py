"""What the jax backend refuses to run in a graph (``Backend.refused_ops``), and why.

* Every op of the built-in list whose IR node lowers to an aten overload the op table
  (``ops.JAX_OPS``) has no implementation for: it runs eagerly on the data's host view,
  counted as refused in ``metrics.fallback_report()``.
* Calls whose torch semantics JAX does not give: integer division, remainder and powers
  (torch raises on a zero divisor or a negative integer exponent, XLA returns a number),
  and transposed convolutions (not in the table yet).
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
from ...op_identity import overload_of, table_key
from .dtypes import SUPPORTED

#: Ops whose integer form differs from torch's on invalid input (see the docstring).
INTEGER_REFUSED = ("div.Tensor_mode", "div.Scalar_mode", "remainder", "fmod", "pow")


def _tensors(args, kwargs):
    for a in (*args, *kwargs.values()):
        if isinstance(a, torch.Tensor):
            yield a
        elif type(a) in (list, tuple):
            yield from (t for t in a if isinstance(t, torch.Tensor))


def _integer_call(op, args, kwargs) -> bool:
    return any(not (t.is_floating_point() or t.is_complex()) for t in _tensors(args, kwargs))


def _unsupported_dtype(op, args, kwargs) -> bool:
    """A call asking for a result dtype JAX lacks (``x.chalf()``): run eagerly, where its
    result's upload raises the user's error (``dtypes.check_supported``)."""
    dtype = kwargs.get("dtype")
    if dtype is None:
        dtype = next((a for a in args if isinstance(a, torch.dtype)), None)
    return dtype is not None and dtype not in SUPPORTED


def _dtype_argument(overload) -> bool:
    return any(a.name == "dtype" for a in overload._schema.arguments)


def _transposed(op, args, kwargs) -> bool:
    """A transposed convolution (``convolution``'s ``transposed`` argument)."""
    return bool(args[6] if len(args) > 6 else kwargs.get("transposed", False))


def _random_bounds(op, args, kwargs) -> bool:
    """``random_(from, to)`` calls run eagerly unless their bounds are valid for the dtype:
    torch raises for ``from >= to`` and bounds out of the dtype's range (``2**digits`` for
    floating types), where ``jax.random.randint`` would return numbers. ``random_(from)``
    without ``to`` (up to the dtype's largest value) too: an exclusive int64 bound cannot
    reach it."""
    if op._overloadname == "to":
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


#: Calls refused by a predicate of their own: the table lowers the op's other calls.
PREDICATES = MappingProxyType(
    {
        "convolution": _transposed,
        "convolution_backward": lambda op, a, k: bool(a[7]),
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


def refused_ops(tables: KernelTables, ops: dict[str, Callable]) -> dict:
    """``refused_ops()``'s mapping for these kernel tables and op table."""
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
            refused[overload] = None
        elif key.startswith(INTEGER_REFUSED) or key.partition(".")[0] in INTEGER_REFUSED:
            refused[overload] = _integer_call
        elif key in PREDICATES:
            refused[overload] = PREDICATES[key]
        elif _dtype_argument(overload):
            refused[overload] = _unsupported_dtype
    return refused
