"""Ops a backend cannot run inside a graph: ``Backend.refused_ops()``.

A backend whose device lacks an op in its graphs (no kernel for a dtype, an op its
compiler rejects, a data-dependent op it cannot place) declares it, instead of lowering
it badly or leaving it out of the op list for every backend sharing the tables. Each call
of a refused op on that backend's device then runs through the eager fallback: its lazy
inputs are materialised (the graph traced so far is cut there and runs), the op runs
eagerly on the device data, and tracing goes on from its results. It is counted as
``aten::<op>`` like any fallback and listed in ``metrics.fallback_report()`` under
"refused", with its count, graph cuts and first user line.

This is the general form of what ``Backend.collectives_in_graph = False`` does for
torch's functional collectives.

``refused_ops()`` maps ops to a predicate or None (always refused):

* keys: an ``OpOverload`` (``torch.ops.aten.sort.stable``), an ``OpOverloadPacket``
  (``torch.ops.aten.sort``: every overload), or a string: ``"aten::sort.stable"``,
  ``"sort.stable"``, ``"aten::sort"`` or ``"sort"`` (``aten`` when no namespace is given;
  without an overload, every overload);
* predicates: ``when(op, args, kwargs) -> bool``, called with the ``OpOverload`` and the
  call's arguments as the lazy kernel receives them (lazy tensors with their ``dtype`` and
  ``shape``, numbers, lists): ``lambda op, args, kwargs: args[0].dtype == torch.float64``.

An op that torch decomposes before it reaches the lazy device (a ``CompositeImplicitAutograd``
op without a lazy kernel: ``linear``, ``reshape``, ``softmax``) cannot be refused: its
pieces are traced instead. Naming one warns, with what to refuse instead, rather than
being silently ignored.

Some kernels record a node of their own for work ATen would do in plain ops (the recurrent
layers and cells: ``runtime/ops``). Refusing such an op declines the node:
the kernel asks ``declines`` and takes the plain ops instead, each traced, and refused or
not, on its own; the call is listed in ``metrics.fallback_report()`` as declined. A kernel
that declines this way for its own op is marked ``declining`` (``guard`` leaves it as it
is, since the eager run of such an op may not exist: ATen's fused recurrent cells have no
CPU kernel).

Refusals are read once, when ``init()`` or ``set_device_backend`` installs the backend;
the dispatch table then wraps the kernels of refused ops (only those: other ops pay
nothing) with a check of the calling device's backend, so another device of the process
whose backend accepts the op keeps tracing it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Collection
from typing import Any

import torch

from .. import op_registry, state
from ..devices import device_from
from ..errors import LazygenRuntimeError
from ..metrics import record_declined
from ..sources import user_source
from ..tracing.tensor import LazyTensor
from .fallback import eager_fallback

#: A predicate: ``(op, args, kwargs) -> bool`` (True: run this call eagerly).
Predicate = Callable[[Any, tuple, dict], bool]


class Refusals:
    """The refusals of the backends ``init()`` installed (a part of the runtime object):
    ``rules``, op (``OpOverload``) or packet -> [(backend, predicate or None)], and the
    backends read (``installed``). A reset keeps them, as it keeps the kernel tables they
    wrap. ``of_op`` holds ``rules_for``'s answers until the next ``install``."""

    __slots__ = ("rules", "installed", "of_op")

    def __init__(self) -> None:
        self.rules: dict[Any, list[tuple[Any, Predicate | None]]] = {}
        self.installed: list = []
        #: ``id(op)`` -> ``(op, its rules and its packet's)`` (see ``rules_for``)
        self.of_op: dict[int, tuple[Any, tuple]] = {}

    def on_reset(self) -> Refusals:
        return self


def install(backend, traced: Collection = ()) -> None:
    """Read ``backend.refused_ops()`` into the rules (once per backend instance); an entry
    that names no op, or whose predicate is not callable, is an error naming the backend,
    and one that names only ops torch decomposes before the lazy device sees them (none in
    ``traced``, the ops with a lazy kernel) a warning."""
    refusals = state.part(Refusals)
    if any(existing is backend for existing in refusals.installed):
        return
    declared = backend.refused_ops()
    parsed = []
    for spec, predicate in dict(declared or {}).items():
        if predicate is not None and not callable(predicate):
            raise LazygenRuntimeError(
                f"lazygen: backend {backend.name!r} refuses {spec!r} with {predicate!r}: "
                "refused_ops() maps an op to None (always) or to a function "
                "(op, args, kwargs) -> bool"
            )
        parsed.append((_resolve(spec, backend), predicate))
        if _decomposed_before_the_device(parsed[-1][0], traced):
            warnings.warn(
                f"lazygen: backend {backend.name!r} refuses {spec!r}, which never reaches "
                "the lazy device: torch decomposes it (CompositeImplicitAutograd) before, so "
                "the refusal has no effect; refuse the ops it decomposes into instead (the "
                "lazy::<op> counters of lr.metrics.report() name them)",
                stacklevel=3,
            )
    refusals.installed.append(backend)
    refusals.of_op.clear()  # the rules change: answers given so far may not hold
    for key, predicate in parsed:
        refusals.rules.setdefault(key, []).append((backend, predicate))


def _resolve(spec, backend):
    """The ``OpOverload`` or ``OpOverloadPacket`` an entry of ``refused_ops()`` names."""
    if isinstance(spec, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return spec
    if isinstance(spec, str):
        namespace, sep, rest = spec.partition("::")
        if not sep:
            namespace, rest = "aten", spec
        name, _, overload = rest.partition(".")
        try:
            packet = getattr(getattr(torch.ops, namespace), name)
            return getattr(packet, overload) if overload else packet
        except (AttributeError, RuntimeError):
            pass
    raise LazygenRuntimeError(
        f"lazygen: backend {backend.name!r} refuses {spec!r}, which names no op; name it as "
        "torch.ops.aten.sort.stable, torch.ops.aten.sort (every overload), 'aten::sort.stable' "
        "or 'sort'"
    )


def _decomposed_before_the_device(key, traced: Collection) -> bool:
    """Whether every overload ``key`` names is decomposed by torch before a lazy kernel or
    the fallback could see it: a ``CompositeImplicitAutograd`` kernel and no lazy kernel.
    A packet's ``out=`` overloads do not count: functionalization never passes them on."""
    if isinstance(key, torch._ops.OpOverload):
        overloads = [key]
    else:
        overloads = [getattr(key, name) for name in key.overloads()]
        overloads = [op for op in overloads if not op._schema.is_mutable]
    return bool(overloads) and all(
        op not in traced
        and torch._C._dispatch_has_kernel_for_dispatch_key(
            op_registry.op_string(op), "CompositeImplicitAutograd"
        )
        for op in overloads
    )


def rules_for(op) -> tuple[tuple[Any, Predicate | None], ...]:
    """The refusals that apply to ``op`` (an ``OpOverload``), of every installed backend:
    its own and its packet's, merged once per op until the next ``install``. Kernels that
    choose between a node of their own and plain ops ask at every call (attention, 6 ops a
    call; the recurrent cells). Looked up by ``id``, a C-level lookup, not twice per op by
    ``OpOverload.__hash__``, a Python method (attention's check: 3.8 -> 2.4 us a call); the
    entry holds ``op``, so its id is not reused meanwhile."""
    of_op = state.part(Refusals).of_op
    entry = of_op.get(id(op))
    if entry is not None and entry[0] is op:
        return entry[1]
    all_rules = state.part(Refusals).rules
    rules = (
        *all_rules.get(op, ()),
        *all_rules.get(getattr(op, "overloadpacket", None), ()),
    )
    of_op[id(op)] = (op, rules)
    return rules


def refused_by(backend, op, args: tuple = (), kwargs: dict | None = None) -> bool:
    """Whether ``backend`` refuses this call of ``op`` (an ``OpOverload``): for kernels
    that choose between lowering an op themselves and a decomposition into plain ops
    (attention: ``ops/attention.py``)."""
    for refuser, predicate in rules_for(op):
        if refuser is backend and (predicate is None or predicate(op, args, kwargs or {})):
            return True
    return False


def declines(backend, op, args: tuple = (), kwargs: dict | None = None, also=()) -> bool:
    """Whether ``backend`` declines the node a kernel would record for this call of ``op``:
    it refuses the call, or has any refusal of an op in ``also`` (the ops the node stands
    for, called in its place on ATen's path: the recurrent layers' fused cells). A decline
    is listed in ``metrics.fallback_report()`` (``declined``); the caller then traces the
    call as plain ops."""
    refused = refused_by(backend, op, args, kwargs) or any(
        refuser is backend for other in also for refuser, _ in rules_for(other)
    )
    if refused:
        record_declined(op_registry.fallback_counter(op), user_source)
    return refused


def declining(kernel):
    """Mark ``kernel`` as deciding itself what a refusal of its op means (``declines``):
    ``guard`` then leaves it unwrapped instead of running refused calls eagerly."""
    kernel.declines_refusals = True
    return kernel


def guard(op, kernel):
    """``kernel``, or, when an installed backend refuses ``op``, a kernel that runs the call
    eagerly where the calling device's backend refuses it and calls ``kernel`` elsewhere
    (a ``declining`` kernel is returned as it is: it declines its node itself)."""
    rules = rules_for(op)
    if not rules or getattr(kernel, "declines_refusals", False):
        return kernel

    def refusing_kernel(*args, **kwargs):
        backend = _backend_of_call(args, kwargs)
        for refuser, predicate in rules:
            if refuser is backend and (predicate is None or predicate(op, args, kwargs)):
                return eager_fallback(op, args, kwargs, refused=True)
        return kernel(*args, **kwargs)

    refusing_kernel.__name__ = f"refusing_{getattr(kernel, '__name__', 'kernel')}"
    refusing_kernel.__wrapped__ = kernel
    return refusing_kernel


def _backend_of_call(args, kwargs):
    """The backend of the device the call runs on: its first lazy tensor's."""
    for arg in (*args, *kwargs.values()):
        if type(arg) is LazyTensor:
            return arg._device.backend
        if type(arg) in (list, tuple):
            for item in arg:
                if type(item) is LazyTensor:
                    return item._device.backend
    device = kwargs.get("device")
    if device is not None and state.is_lazy_device(device):
        return device_from(device).backend  # a factory's
    return None
