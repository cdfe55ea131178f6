"""The eager fallback: run any op without a lazy kernel on the device data, eagerly.

Lazy inputs are materialised (one sync for all of them), the op runs eagerly on the
backend's data device, tensor results become device data. Mutated arguments get a fresh
copy, so device data stays immutable (pending graphs may still read the old data).

It serves two callers. ``__torch_dispatch__`` of the inner ``LazyTensor`` (below
functionalization: arguments and results are inner tensors, a mutated argument is pointed
at its new data). And the ``PrivateUse1`` backend fallback, for ops that reach the device
key above functionalization (``out=`` variants called inside composite kernels): its
arguments are functional wrappers, so results are wrapped again and mutated arguments are
written back through functionalization (``functional=True``).
"""

from __future__ import annotations

import torch

from .. import op_registry, state
from ..devices import LazyDevice, device_from
from ..errors import LazygenRuntimeError
from ..execution import executor
from ..metrics import count, record_fallback
from ..sources import user_source
from ..state import settings
from ..tracing.tensor import LazyTensor, from_data, inner, to_functional


@state.memo
def _op_info(func):
    """(counter name, op-list name, positions of mutated args, names of mutated kwargs,
    whether it is a host read, positions of results that stay host tensors) of ``func``."""
    positions, names = [], []
    for i, arg in enumerate(func._schema.arguments):
        if arg.alias_info is not None and arg.alias_info.is_write:
            (names if arg.kwarg_only else positions).append((i, arg.name))
    return (
        # the counter (`aten::div`, as LTC's) leaves the overload out; the report says
        # which overload to add to an op list (`div.Tensor`)
        op_registry.fallback_counter(func),
        op_registry.op_list_name(func),
        tuple(i for i, _ in positions),
        tuple(n for _, n in names),
        op_registry.has("host_reads", func),
        op_registry.of("host_results", func),
    )


def _lazy_inner(obj) -> LazyTensor | None:
    """The inner tensor of a lazy argument (inner already, or a functional wrapper)."""
    if type(obj) is LazyTensor:
        return obj
    if isinstance(obj, torch.Tensor) and obj.device.type == settings.device_type:
        return inner(obj)
    return None


def _collect(obj, out: list) -> None:
    lazy = _lazy_inner(obj)
    if lazy is not None:
        out.append(lazy)
    elif isinstance(obj, (torch.UntypedStorage, torch.TypedStorage)):
        _refuse_lazy_storage(obj)
    elif type(obj) in (list, tuple):
        for item in obj:
            _collect(item, out)
    elif type(obj) is dict:
        for item in obj.values():
            _collect(item, out)


def _refuse_lazy_storage(storage) -> None:
    """A lazy tensor's storage (``set_(storage, ...)``, typed storage element access) holds
    no data: run eagerly, torch's own kernel met it beside host tensors and said "Attempted
    to set the storage of a tensor on device "cpu" to a storage on different device"."""
    if storage.device.type == settings.device_type:
        name = settings.device_type
        raise LazygenRuntimeError(
            f"lazygen: a {name} tensor's storage holds no data (lazy tensors have no "
            "addressable memory), so it cannot be read, written or set into a tensor; use "
            "the tensor itself (x.set_(other_tensor), x[i], x.fill_(v)) or copy it to the "
            "CPU first (x.cpu().untyped_storage())"
        )


def _unwrap(obj, device: LazyDevice):
    lazy = _lazy_inner(obj)
    if lazy is not None:
        return lazy._value.node.data
    if type(obj) in (list, tuple):
        return type(obj)(_unwrap(o, device) for o in obj)
    if isinstance(obj, torch.device) and obj.type == settings.device_type:
        return device.backing
    if isinstance(obj, str) and obj.startswith(settings.device_type):
        return device.backing
    return obj


def eager_fallback(
    func, args, kwargs, functional: bool = False, write_back: bool = True, refused: bool = False
):
    """Run ``func`` eagerly on the device data of its lazy arguments (see the module
    docstring for ``functional``). ``write_back=False``: mutated arguments are left alone
    and their new values returned as fresh results (a functionalization kernel above us
    points them at the results itself). ``refused``: the op has a lazy kernel that the
    device's backend refuses to run in a graph (``refusals``), reported apart."""
    name, listed, mutated_positions, mutated_kwargs, host_read, host = _op_info(func)
    count(name)
    lazy: list[LazyTensor] = []
    _collect(args, lazy)
    _collect(kwargs, lazy)
    if lazy:
        device = lazy[0]._device
        cut = any(not t._value.node.is_input for t in lazy)
        record_fallback(name, cut, user_source, host_read, refused, listed)
        executor.sync(lazy)
    else:
        record_fallback(name, False, user_source, refused=refused, listed=listed)
        device = device_from(kwargs.get("device"))
    eager_args = [_unwrap(a, device) for a in args]
    eager_kwargs = {k: _unwrap(v, device) for k, v in kwargs.items()}
    aliases: dict[int, torch.Tensor] = {}
    targets = [(eager_args, i, args[i]) for i in mutated_positions if i < len(args)]
    targets += [(eager_kwargs, k, kwargs[k]) for k in mutated_kwargs if k in kwargs]
    for container, key, original in targets:
        if _lazy_inner(original) is not None:
            container[key] = container[key].clone()
            aliases[id(container[key])] = original
    result = func(*eager_args, **eager_kwargs)
    if not write_back:
        aliases = {}
    for container, key, original in targets:
        if id(container[key]) not in aliases:
            continue
        new = container[key]
        if type(original) is LazyTensor:
            original.set_data(new)
        else:  # a functional wrapper: written through functionalization
            with torch.no_grad():
                if original.shape != new.shape:
                    original.resize_(new.shape)
                original.copy_(new)
    target_device = kwargs.get("device")
    if target_device is not None and torch.device(target_device).type != settings.device_type:
        return result  # an explicit non-lazy device: results stay where the op put them
    if host is not None and type(result) is tuple:
        return tuple(
            r.cpu() if i in host else _wrap(r, device, aliases, functional)
            for i, r in enumerate(result)
        )
    return _wrap(result, device, aliases, functional)


def _wrap(obj, device: LazyDevice, aliases: dict, functional: bool):
    if isinstance(obj, torch.Tensor):
        target = aliases.get(id(obj))
        if target is not None:
            return target
        lazy = from_data(obj, device)
        return to_functional(lazy) if functional else lazy
    if type(obj) in (list, tuple):
        return type(obj)(_wrap(o, device, aliases, functional) for o in obj)
    return obj
