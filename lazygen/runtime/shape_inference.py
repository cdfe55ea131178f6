"""Output shapes of an op: a cache keyed on the op and its arguments' metadata; meta kernels
(or a hand-written ``compute_shape_*``) only on a miss."""

from __future__ import annotations

import torch

from .ir import Shape
from .tensor import DEVICE_TYPE, LazyTensor

_cache: dict = {}
_MAX_ENTRIES = 50_000
_META = torch.device("meta")


def _key(arg, value_dependent: bool):
    kind = type(arg)
    if kind is LazyTensor:
        return (arg.dtype, arg._sizes)
    if kind is float or kind is complex:
        return arg if value_dependent else kind
    if kind is int or arg is None or kind is str:
        return arg
    if kind is bool:
        return (bool, arg)
    if kind is list or kind is tuple:
        return tuple([_key(a, value_dependent) for a in arg])
    if isinstance(arg, torch.Tensor):
        return ("tensor", arg.device.type, arg.dtype, tuple(arg.shape))
    if isinstance(arg, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return (type(arg), str(arg))
    return arg


def _to_meta(arg):
    if isinstance(arg, torch.Tensor):
        return torch.empty(arg.shape, dtype=arg.dtype, device=_META)
    if type(arg) in (list, tuple):
        return type(arg)(_to_meta(a) for a in arg)
    if isinstance(arg, torch.device) and arg.type == DEVICE_TYPE:
        return _META
    return arg


def _shapes_of(result) -> tuple[Shape, ...]:
    if isinstance(result, torch.Tensor):
        return (Shape(result.dtype, tuple(result.shape)),)
    if isinstance(result, (tuple, list)):
        shapes = []
        for item in result:
            shapes.extend(_shapes_of(item))
        return tuple(shapes)
    return ()


def infer_shapes(op, args, kwargs, compute_fn=None, value_dependent=False) -> tuple[Shape, ...]:
    if compute_fn is not None and getattr(compute_fn, "data_dependent", False):
        return compute_shapes(op, args, kwargs, compute_fn)
    key = (
        op,
        tuple([_key(a, value_dependent) for a in args]),
        tuple([(k, _key(v, value_dependent)) for k, v in kwargs.items()]) if kwargs else (),
    )
    shapes = _cache.get(key)
    if shapes is None:
        shapes = compute_shapes(op, args, kwargs, compute_fn)
        if len(_cache) >= _MAX_ENTRIES:
            _cache.clear()
        _cache[key] = shapes
    return shapes


def compute_shapes(op, args, kwargs, compute_fn=None) -> tuple[Shape, ...]:
    """Shapes without the cache: ``compute_fn`` when given, else the meta kernel."""
    if compute_fn is not None:
        return tuple(Shape(s.dtype, tuple(s.sizes)) for s in compute_fn(*args, **kwargs))
    with torch.utils._python_dispatch._disable_current_modes():
        result = op(*_to_meta(tuple(args)), **{k: _to_meta(v) for k, v in kwargs.items()})
    return _shapes_of(result)


def clear_cache() -> None:
    _cache.clear()
