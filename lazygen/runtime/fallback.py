"""The eager fallback: run any op without a lazy kernel on the backing device.

Lazy inputs are materialised (one sync for all of them), the op runs eagerly, tensor
results become device data. Mutated arguments get a fresh copy, so device data stays
immutable (pending graphs may still read the old data).
"""

from __future__ import annotations

import torch

from . import executor
from . import tensor as _tensor
from .metrics import count
from .tensor import DEVICE_TYPE, LazyDevice, LazyTensor, from_data

_info: dict = {}  # op -> (counter name, positions of mutated args, names of mutated kwargs)


def _op_info(func):
    info = _info.get(func)
    if info is None:
        schema = func._schema
        positions, names = [], []
        for i, arg in enumerate(schema.arguments):
            if arg.alias_info is not None and arg.alias_info.is_write:
                (names if arg.kwarg_only else positions).append((i, arg.name))
        info = (schema.name, tuple(i for i, _ in positions), tuple(n for _, n in names))
        _info[func] = info
    return info


def _collect(obj, out: list) -> None:
    if type(obj) is LazyTensor:
        out.append(obj)
    elif type(obj) in (list, tuple):
        for item in obj:
            _collect(item, out)
    elif type(obj) is dict:
        for item in obj.values():
            _collect(item, out)


def _unwrap(obj, device: LazyDevice | None):
    if type(obj) is LazyTensor:
        return obj._value.node.data
    if type(obj) in (list, tuple):
        return type(obj)(_unwrap(o, device) for o in obj)
    if isinstance(obj, torch.device) and obj.type == DEVICE_TYPE:
        return device.backing
    if isinstance(obj, str) and obj.startswith(DEVICE_TYPE):
        return device.backing
    return obj


def _wrap(obj, device: LazyDevice, aliases: dict):
    if isinstance(obj, torch.Tensor):
        target = aliases.get(id(obj))
        if target is not None:
            return target
        return from_data(obj, device)
    if type(obj) in (list, tuple):
        return type(obj)(_wrap(o, device, aliases) for o in obj)
    return obj


def eager_fallback(func, args, kwargs):
    name, mutated_positions, mutated_kwargs = _op_info(func)
    count(name)
    lazy: list[LazyTensor] = []
    _collect(args, lazy)
    _collect(kwargs, lazy)
    if lazy:
        device = lazy[0]._device
        executor.sync(lazy)
    else:
        from .devices import device_from

        device = device_from(kwargs.get("device"))
    eager_args = [_unwrap(a, device) for a in args]
    eager_kwargs = {k: _unwrap(v, device) for k, v in kwargs.items()}
    aliases: dict[int, LazyTensor] = {}
    targets = [(eager_args, i, args[i]) for i in mutated_positions if i < len(args)]
    targets += [(eager_kwargs, k, kwargs[k]) for k in mutated_kwargs if k in kwargs]
    for container, key, original in targets:
        if type(original) is LazyTensor:
            container[key] = container[key].clone()
            aliases[id(container[key])] = original
    result = func(*eager_args, **eager_kwargs)
    for container, key, original in targets:
        if type(original) is LazyTensor:
            original.set_data(container[key])
    target_device = kwargs.get("device")
    if target_device is not None and torch.device(target_device).type != DEVICE_TYPE:
        return result  # an explicit non-lazy device: results stay where the op put them
    return _wrap(result, device, aliases)


def kernel_for(func):
    """The active kernel of ``func``, or one the runtime builds (cached), or None."""
    kernel = _tensor._active_kernels.get(func)
    if kernel is None and func not in _no_decomposition:
        from . import decompositions, registry

        kernel = None if registry.forced(func) else decompositions.lookup(func)
        if kernel is None:
            _no_decomposition.add(func)
        else:
            _tensor._active_kernels[func] = kernel
    return kernel


def dispatch_missing(func, args, kwargs):
    """An op without an active kernel: a runtime-built kernel if one applies, else eager."""
    kernel = kernel_for(func)
    if kernel is None:
        return eager_fallback(func, args, kwargs)
    return kernel(*args, **kwargs)


_no_decomposition: set = set()  # cleared by registry.refresh()

_tensor.set_fallback(dispatch_missing)
