"""Output shapes of an op: a cache keyed on the op and its arguments' metadata; meta kernels
(or a hand-written ``compute_shape_*``) only on a miss."""

from __future__ import annotations

from collections import OrderedDict

import torch

from .config import settings
from .ir import Shape, scalar_dtype, wrapped_number_dtype
from .tensor import DEVICE_TYPE, LazyTensor

_cache: OrderedDict = OrderedDict()  # least recently used first
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


def _shapes_of(result, top: bool = True) -> tuple[Shape | None, ...]:
    """One shape per tensor output; ``None`` where a multi-output op left an output undefined
    (``convolution_backward`` with an ``output_mask`` entry off)."""
    if isinstance(result, torch.Tensor):
        return (Shape(result.dtype, tuple(result.shape)),)
    if isinstance(result, (tuple, list)):
        shapes = []
        for item in result:
            if item is None and top and type(result) is tuple:
                shapes.append(None)
            else:
                shapes.extend(_shapes_of(item, False))
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
        _cache[key] = shapes
        if len(_cache) > settings.shape_cache_size:
            trim_cache()
    else:
        _cache.move_to_end(key)
    return shapes


def compute_shapes(op, args, kwargs, compute_fn=None) -> tuple[Shape, ...]:
    """Shapes without the cache: ``compute_fn`` when given, else the meta kernel."""
    if compute_fn is not None:
        return tuple(Shape(s.dtype, tuple(s.sizes)) for s in compute_fn(*args, **kwargs))
    meta_args = list(_to_meta(tuple(args)))
    meta_kwargs = {k: _to_meta(v) for k, v in kwargs.items()}
    _numbers_to_tensors(op, meta_args, meta_kwargs)
    with torch.utils._python_dispatch._disable_current_modes():
        result = op(*meta_args, **meta_kwargs)
    return _shapes_of(result)


_NUMBER_TYPES = (bool, int, float, complex)
_tensor_slots: dict = {}  # op -> (positions, names) of its ``Tensor`` arguments


def _numbers_to_tensors(op, args: list, kwargs: dict) -> None:
    """A wrapped number reaches ``__torch_dispatch__`` as a Python number, which most ops do
    not accept for a ``Tensor``: give it the 0-dim dtype with which promotion treats it as
    eager treats a wrapped number."""
    slots = _tensor_slots.get(op)
    if slots is None:
        tensor_args = [
            (i, a.name) for i, a in enumerate(op._schema.arguments) if str(a.type) == "Tensor"
        ]
        slots = _tensor_slots[op] = (
            tuple(i for i, _ in tensor_args),
            tuple(n for _, n in tensor_args),
        )
    positions, names = slots
    numbers = [i for i in positions if i < len(args) and type(args[i]) in _NUMBER_TYPES]
    named = [n for n in names if type(kwargs.get(n)) in _NUMBER_TYPES]
    if not numbers and not named:
        return
    others = [
        (t.dtype, t.dim())
        for t in list(args) + list(kwargs.values())
        if isinstance(t, torch.Tensor)
    ]

    def as_tensor(value):
        dtype = wrapped_number_dtype(scalar_dtype(value), others)
        return torch.empty((), dtype=dtype, device=_META)

    for i in numbers:
        args[i] = as_tensor(args[i])
    for name in named:
        kwargs[name] = as_tensor(kwargs[name])


def clear_cache() -> None:
    _cache.clear()


def trim_cache() -> None:
    """Drop least recently used entries beyond ``config.set_shape_cache_size``."""
    while len(_cache) > settings.shape_cache_size:
        try:
            _cache.popitem(last=False)
        except KeyError:  # emptied by another thread
            break


def cache_size() -> int:
    return len(_cache)
