"""Kernels the runtime builds for ops without a lazy kernel, tried before the eager fallback.

* ``_foreach_*`` ops (what ``torch.optim`` uses on the lazy device) run as one lazy op per
  list element, so an optimizer step stays in the graph (the eager fallback would sync
  every parameter and gradient mid-step).
* Ops that read only their tensor argument's metadata (``ones_like``, ``new_zeros``, ...)
  run eagerly on an uninitialised stand-in, so they never sync the argument's IR (random
  ones on a seed backend run their composite kernel, a draw in the graph).
* Ops without a CPU kernel but with a composite one (``mul.Scalar``, ``_safe_softmax``,
  ``_unsafe_view``, ``softmax.int``, ...) run that kernel, as they would on any backend
  without its own kernel: under functionalization, so that the ops it calls (views and
  in-place ones included) reach the lazy kernels.

``lookup(op, kernel_for)`` returns the kernel or None; ``dispatch.kernel_for`` (passed in:
foreach kernels look up their element op's kernel) caches it in the active table, and
``dispatch.refresh`` forgets both the kernels and the misses.
"""

from __future__ import annotations

from functools import partial
from itertools import repeat

import torch
from torch.utils._pytree import tree_map

from .. import op_registry, state
from ..devices import get_device
from ..errors import LazygenRuntimeError
from ..metrics import count
from ..state import settings
from ..tracing.tensor import LazyTensor, from_data, shared_scalars
from .fallback import eager_fallback

_KEY = torch._C.DispatchKey

#: A keyset to ``redispatch`` an op to its CompositeExplicitAutograd kernel. The lazy
#: device's PrivateUse1 slot holds no kernel of its own for such ops (only a backend
#: fallback, which a composite kernel outranks), so redispatching there reaches the composite.
COMPOSITE = torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1)


def lookup(op, kernel_for):
    """A kernel for ``op`` built from lazy kernels, or None. ``kernel_for(op)`` finds the
    kernel of another op (the dispatcher's lookup)."""
    kernel = None
    if op_registry.is_foreach(op):
        kernel = _foreach_kernel(op, kernel_for)
    elif op_registry.has("metadata_only", op):
        kernel = _metadata_only_kernel(op)
    if kernel is None:
        kernel = composite_kernel(op)
    return kernel


# _foreach_* ------------------------------------------------------------------------------


def _element_type(arg) -> str:
    """The type an argument has in the element op: a list's element, else the same."""
    text = str(arg.type)
    if text.startswith("List[") and text.endswith("]"):
        return text[5:-1]
    if arg.name == "scalars" and text == "Tensor":  # a tensor of per-element scalars
        return "number"
    return text


def _matches(foreach_args, element_schema) -> bool:
    args = element_schema.arguments
    if len(args) < len(foreach_args) or any(
        a.alias_info is not None and a.alias_info.is_write for a in args
    ):
        return False
    if any(not a.has_default_value() for a in args[len(foreach_args) :]):
        return False
    return all(_element_type(f) == str(e.type) for f, e in zip(foreach_args, args, strict=False))


def _element_kernel(op, kernel_for):
    """``(element op, its kernel)`` for a functional ``_foreach_`` op, or None."""
    schema = op._schema
    if schema.returns and str(schema.returns[0].type) != "List[Tensor]":
        return None
    if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
        return None  # in-place and out= variants: functionalization gives us functional ones
    packet = op_registry.of("foreach_element", op) or op_registry.packet_of(
        schema.name.replace("_foreach_", "", 1)
    )
    if packet is None:
        return None
    for overload in packet.overloads():
        element = getattr(packet, overload)
        if _matches(schema.arguments, element._schema):
            kernel = kernel_for(element)
            if kernel is not None:
                return element, kernel
    return None


def _foreach_kernel(op, kernel_for):
    found = _element_kernel(op, kernel_for)
    if found is None:
        return None
    element, kernel = found
    # Per foreach argument: (name, taken per element, element keyword name | None, default).
    plan = tuple(
        (
            f.name,
            _element_type(f) != str(f.type),
            e.name if e.kwarg_only else None,
            f.default_value if f.has_default_value() else None,
        )
        for f, e in zip(op._schema.arguments, element._schema.arguments, strict=False)
    )

    # Whether every per-element argument is positional (keywords are the same each time).
    rows = not any(listed and keyword is not None for _, listed, keyword, _ in plan)

    def foreach(*args, **kwargs):
        values = list(args)
        for name, _, _, default in plan[len(args) :]:
            values.append(kwargs.get(name, default))
        lists = [
            v.tolist() if isinstance(v, torch.Tensor) else v
            for v, step in zip(values, plan, strict=True)
            if step[1]
        ]
        first = lists[0][0] if lists[0] else None
        with shared_scalars(first._device if type(first) is LazyTensor else None):
            size = len(lists[0])
            if rows and all(len(listed) == size for listed in lists):
                return _elementwise(kernel, values, plan, lists)
            results = []
            for i in range(size):
                positional, keywords, n = [], {}, 0
                for value, (_, listed, keyword, _) in zip(values, plan, strict=True):
                    if listed:
                        value = lists[n][i]
                        n += 1
                    if keyword is None:
                        positional.append(value)
                    else:
                        keywords[keyword] = value
                results.append(kernel(*positional, **keywords))
        return results

    foreach.__name__ = f"foreach_{op_registry.base_name(element)}"
    return foreach


def _elementwise(kernel, values: list, plan: tuple, lists: list) -> list:
    """``kernel`` on each position of ``lists``, the other arguments the same each time:
    the common case of a foreach op (lists of one length, no list passed by keyword), one
    ``zip`` row per element instead of a list and a dict built per element (an AdamW step
    calls ~8 foreach ops on every parameter)."""
    columns, keywords, n = [], {}, 0
    for value, (_, listed, keyword, _) in zip(values, plan, strict=True):
        if listed:
            columns.append(lists[n])
            n += 1
        elif keyword is None:
            columns.append(repeat(value))
        else:
            keywords[keyword] = value
    if keywords:
        kernel = partial(kernel, **keywords)
    return [kernel(*row) for row in zip(*columns, strict=False)]  # repeat() is endless


# Metadata-only ops --------------------------------------------------------------------------


def _stand_in(arg):
    if type(arg) is LazyTensor:
        return torch.empty(arg._sizes, dtype=arg.dtype, device=arg._device.backing)
    return arg


def _metadata_only_kernel(op):
    """Runs ``op`` eagerly on a stand-in. A random one (``randn_like``, ``rand_like``,
    ``randint_like``) draws eager's numbers that way; on a backend drawing from seeds
    (``Backend.random_numbers = "seed"``) it runs its composite kernel instead
    (``empty_like`` then an in-place draw), so the draw is a node of the graph with a seed
    input: a graph replayed with fresh seeds (``torch.compile``) draws new numbers at
    every call rather than replaying one call's upload."""
    name = op_registry.counter_name(op.overloadpacket)
    drawn_in_graph = composite_kernel(op) if torch.Tag.nondeterministic_seeded in op.tags else None

    def kernel(*args, **kwargs):
        device = next((a._device for a in args if type(a) is LazyTensor), None)
        target = kwargs.get("device")
        if target is not None:
            target = torch.device(target)
            if target.type != settings.device_type:  # the result goes elsewhere
                return eager_fallback(op, args, kwargs)
            device = get_device(target.index or 0)
        if device is None:
            return eager_fallback(op, args, kwargs)
        if drawn_in_graph is not None and device.backend.random_numbers == "seed":
            return drawn_in_graph(*args, **kwargs)
        count(name)
        result = op(*[_stand_in(a) for a in args], **{**kwargs, "device": device.backing})
        return from_data(result, device)

    return kernel


# CompositeExplicitAutograd kernels ------------------------------------------------------------


def _composite_call(op, with_cpu_kernel: bool):
    """How to call ``op``'s composite kernel, or None (no composite one, or a CPU kernel and
    not ``with_cpu_kernel``: for most such ops the composite kernel wraps their out= form)."""
    if op.has_kernel_for_dispatch_key(_KEY.CompositeImplicitAutograd):
        return op.decompose
    if op.has_kernel_for_dispatch_key(_KEY.CPU) and not with_cpu_kernel:
        return None
    if op.has_kernel_for_dispatch_key(
        _KEY.CompositeExplicitAutograd
    ) or op.has_kernel_for_dispatch_key(_KEY.CompositeExplicitAutogradNonFunctional):
        return lambda *args, **kwargs: op.redispatch(COMPOSITE, *args, **kwargs)
    return None


_REENABLED = torch._C.DispatchKeySet(_KEY.Functionalize) | torch._C.DispatchKeySet(
    _KEY.ADInplaceOrView
)


def _to_functional(obj, wrapped: list):
    """A functional wrapper of a lazy argument (remembered in ``wrapped``), else ``obj``."""
    if type(obj) is not LazyTensor:
        return obj
    wrapper = torch._to_functional_tensor(obj)
    wrapped.append((obj, wrapper))
    return wrapper


def _write_back(wrapped: list[tuple[LazyTensor, torch.Tensor]]) -> None:
    """Arguments the composite kernel mutated take their new values.

    Some ops mutate arguments their schema does not mark as written (``native_batch_norm``
    updates its running statistics in place), so functionalization hands them to us as
    functional ops; their composite kernels then mutate the wrappers made here, and without
    this the caller's running statistics never changed."""
    for original, wrapper in wrapped:
        torch._sync(wrapper)
        current = torch._from_functional_tensor(wrapper)
        if current is original:
            continue
        if (
            type(current) is not LazyTensor
            or current.dtype != original.dtype
            or current.shape != original.shape
        ):
            raise LazygenRuntimeError(
                f"lazygen: a composite kernel replaced a lazy argument by a "
                f"{type(current).__name__} of {current.dtype}{list(current.shape)} (it was "
                f"{original.dtype}{list(original.shape)}), which a lazy tensor cannot follow"
            )
        original._value = current._value


def _resolved(obj):
    """Lazy tensors carry no conjugate or negative bit: apply them."""
    if isinstance(obj, torch.Tensor) and (obj.is_conj() or obj.is_neg()):
        return obj.resolve_conj().resolve_neg()
    return obj


def _from_functional(obj):
    if isinstance(obj, torch.Tensor) and torch._is_functional_tensor(obj):
        torch._sync(obj)
        return torch._from_functional_tensor(obj)
    return obj


def composite_kernel(op, with_cpu_kernel: bool = False):
    """A kernel running ``op``'s composite kernel under functionalization, or None."""
    call = _composite_call(op, with_cpu_kernel)
    if call is None:
        return None

    unusable = []  # set once the composite kernel proved unusable here: eager from then on

    def kernel(*args, **kwargs):
        # the composite ops running on this thread (re-entry goes eager)
        per_thread = state.runtime.per_thread
        running = getattr(per_thread, "decomposing", None)
        if running is None:
            running = per_thread.decomposing = set()
        if unusable or op in running:  # op in running: its composite kernel calls the op
            return eager_fallback(op, args, kwargs)
        wrapped: list[tuple[LazyTensor, torch.Tensor]] = []
        functional_args, functional_kwargs = tree_map(
            lambda obj: _to_functional(obj, wrapped), (args, kwargs)
        )
        include = torch._C._dispatch_tls_local_include_set()
        exclude = torch._C._dispatch_tls_local_exclude_set()
        running.add(op)
        try:
            with torch._C._ForceDispatchKeyGuard(include, exclude - _REENABLED):
                result = tree_map(_resolved, call(*functional_args, **functional_kwargs))
        except Exception:
            # Some composite kernels call ops functionalization refuses (``__iand__``...).
            # Nothing escaped the functional wrappers; eager raises the user's error if
            # it was one, else the composite kernel is not for this device.
            result = eager_fallback(op, args, kwargs)
            unusable.append(True)
            return result
        finally:
            running.discard(op)
        _write_back(wrapped)
        return tree_map(_from_functional, result)

    kernel.__name__ = f"composite_{op_registry.base_name(op)}"
    return kernel
