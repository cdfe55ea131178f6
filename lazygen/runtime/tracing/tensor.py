"""Lazy tensors: ``LazyTensor`` (the inner wrapper subclass) and its functional outer wrapper.

Users hold the outer tensor, made by ``torch._to_functional_tensor``; functionalization turns
views and in-place ops into functional ops on the inner ``LazyTensor``, whose
``__torch_dispatch__`` routes each op to a lazy kernel or the eager fallback.
An inner tensor holds one ``Value``: device data once materialised, IR otherwise.
"""

from __future__ import annotations

import weakref

import torch

from ..devices import LazyDevice
from ..errors import LazygenRuntimeError
from ..ir import DeviceData, FixedScalar, ScalarTable, Shape, Value
from ..state import kernel_table, settings


class shared_scalars:
    """Within this block, equal Python numbers traced on ``device`` share one graph input.

    A foreach op runs its element op once per tensor with the same numbers: an AdamW step
    passes each of its 7 numbers once per parameter (as a scalar, or as a list of equal
    per-parameter values such as the bias corrections), 252 of the 335 graph inputs of a
    small transformer's step. Within one foreach call equal numbers are equal every step,
    so sharing them keeps the graph's structure stable. Across ops it would not: a number
    that changes every step (a scheduled learning rate) would sometimes equal another one,
    and each such coincidence would change the structure and compile another graph. Blocks
    do not nest (the outer one owns the table)."""

    __slots__ = ("device", "owner")

    def __init__(self, device: LazyDevice | None) -> None:
        self.device = device

    def __enter__(self) -> None:
        device = self.device
        self.owner = device is not None and device.shared_scalars is None
        if self.owner:
            device.shared_scalars = ScalarTable()

    def __exit__(self, *exc_info) -> None:
        if self.owner:
            self.device.shared_scalars = None


class fixed_scalars:
    """Within this block, every Python number traced on ``device`` is a ``FixedScalar``
    (one per distinct number): a constant of the graph, which a backend may compile in.
    For tracing whose numbers are the same at every run of the graph by construction (a
    Dynamo capture: the FX graph holds them as literals); ``shared_scalars`` blocks inside
    it use its table."""

    __slots__ = ("device", "previous")

    def __init__(self, device: LazyDevice) -> None:
        self.device = device

    def __enter__(self) -> None:
        self.previous = self.device.shared_scalars
        self.device.shared_scalars = ScalarTable(FixedScalar)

    def __exit__(self, *exc_info) -> None:
        self.device.shared_scalars = self.previous


class LazyTensor(torch.Tensor):
    """The inner tensor: metadata of a contiguous tensor plus an IR ``Value``."""

    __slots__ = ("_value", "_device", "_sizes", "_shape")
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, value: Value, device: LazyDevice):
        return new_lazy(value, device, cls)

    def __init__(self, value: Value, device: LazyDevice) -> None:
        pass

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kernel = _kernel_table.get(id(func))  # see ``_kernel_table``
        if kernel is None:
            kernel = _kernel_table.get(func)
            if kernel is not None:
                _kernel_table[id(func)] = kernel
        if kernel is not None:
            if kwargs:
                return kernel(*args, **kwargs)
            return kernel(*args)
        missing = _kernel_table.missing
        if missing is None:
            raise LazygenRuntimeError(
                f"lazygen: {func} reached a lazy tensor before lazygen.runtime.init()"
            )
        return missing(func, args, kwargs or {})

    def __repr__(self) -> str:
        node = self._value.node
        state = "data" if node.is_input else f"ir:{node.op_name or node.op_kind}"
        return (
            f"LazyTensor({tuple(self._sizes)}, {self.dtype}, {self._device.torch_device}, {state})"
        )

    @property
    def is_materialized(self) -> bool:
        return self._value.node.is_input

    def set_data(self, data: torch.Tensor) -> None:
        """Point this tensor at freshly materialised ``data`` (same shape and dtype), a
        torch tensor, handed to the backend when its data is not torch's."""
        self._value = device_data(data, self._device)
        self._shape = self._value.node.shapes[0]


_STRIDED = torch.strided


def _wrapper_maker():
    """``torch.Tensor._make_wrapper_subclass``, called with its arguments up to ``device`` by
    position: torch parses keywords by name, ~0.25 us more a call (5% of a traced op). The
    order is checked once on a meta tensor; where a torch orders them differently, the same
    call by keyword (one Python frame more)."""
    make = torch.Tensor._make_wrapper_subclass
    meta = torch.device("meta")
    try:
        probe = make(LazyTensor, (2, 3), None, None, None, torch.float16, _STRIDED, meta)
        if (probe.dtype, probe.device, probe.shape, probe.stride(), probe.layout) == (
            torch.float16,
            meta,
            (2, 3),
            (3, 1),
            _STRIDED,
        ) and not probe.requires_grad:
            return make
    except (TypeError, RuntimeError):
        pass

    def by_keyword(cls, sizes, strides, storage_offset, memory_format, dtype, layout, device):
        return make(cls, sizes, dtype=dtype, device=device)

    return by_keyword


_make_wrapper_subclass = _wrapper_maker()
_ref = weakref.ref


def new_lazy(value: Value, device: LazyDevice, cls=None) -> LazyTensor:
    """A new inner tensor for ``value`` (the hot path: ``LazyTensor(...)`` without ``__init__``)."""
    shape = value.node.shapes[value.index]
    tensor = _make_wrapper_subclass(
        cls or LazyTensor, shape[1], None, None, None, shape[0], _STRIDED, device.torch_device
    )
    tensor._value = value
    tensor._device = device
    tensor._sizes = shape[1]
    tensor._shape = shape  # (dtype, sizes): the shape cache's key for this tensor
    live = device.live
    live.append(_ref(tensor))
    if len(live) > device.prune_at:
        device.prune()
    return tensor


# The dispatch table (``state.kernel_table``, filled by ``dispatch``, with the handler of
# ops without a kernel, its ``missing``, set by ``dispatch`` when ``init()`` wires the
# runtime). The table holds each kernel under its op and, once the op has been dispatched here, under
# ``id(op)`` too: an ``OpOverload``'s ``__hash__`` is a Python method, a frame per lookup
# (~70 ns, 1-2% of a traced op), where ``id`` is a C call. ``dispatch.refresh`` rebuilds the
# table whenever it changes, so both keys go together; an id is never reused while its op
# is a key of the table, which holds the op, and an int never equals an op.
_kernel_table = kernel_table


def unsupported_layout(layout) -> RuntimeError:
    name = settings.device_type
    return LazygenRuntimeError(
        f"lazygen: {layout} tensors cannot live on the {name} device, which holds strided "
        "(dense) tensors only; keep them on the CPU, or convert with .to_dense() first"
    )


def unsupported_nested() -> RuntimeError:
    """Nested tensors reach the device through the eager fallback of the op that makes them;
    the usual one is ``nn.TransformerEncoder``'s inference fast path, which torch takes on
    every PrivateUse1 device and which packs a padded batch into a nested tensor."""
    name = settings.device_type
    return LazygenRuntimeError(
        f"lazygen: nested tensors cannot live on the {name} device, which holds strided "
        "(dense) tensors only. nn.TransformerEncoder makes one in eval mode under no_grad "
        "when given src_key_padding_mask: build it with enable_nested_tensor=False, or call "
        "torch.backends.mha.set_fastpath_enabled(False); otherwise keep nested tensors on "
        "the CPU, or convert with .to_padded_tensor(0.0) first"
    )


def from_data(data: torch.Tensor, device: LazyDevice) -> LazyTensor:
    """An inner lazy tensor holding ``data`` as device data (the backend uploads it: moved to
    its data device, contiguous; ``data`` itself when it already is)."""
    if data.layout != torch.strided:
        raise unsupported_layout(data.layout)
    if data.is_nested:  # a strided layout, but no sizes: nothing a graph value can hold
        raise unsupported_nested()
    return LazyTensor(device_data(data, device), device)


def device_data(data: torch.Tensor, device: LazyDevice) -> Value:
    """The value of device data holding torch tensor ``data`` (which the caller will not
    change): converted by the backend when not on its data device, not contiguous, or when
    the backend's data is not torch's (``Backend.torch_data``).

    The one place torch data becomes device data, so the one place that makes its memory
    mean what its values are: an efficient zero tensor (autograd's zero gradient, e.g. of
    ``sgn``) has no memory behind it, and a conjugate or negative view keeps a lazy bit in
    metadata. A backend reading the memory (DLPack, numpy) would see garbage or the
    unconjugated values; both are materialised here."""
    if data._is_zerotensor():
        data = torch.zeros(data.shape, dtype=data.dtype, device=data.device)
    elif data.is_conj() or data.is_neg():
        data = data.resolve_conj().resolve_neg()
    backend = device.backend
    if not backend.torch_data:
        shape = Shape(data.dtype, tuple(data.shape))
        return Value(DeviceData(backend.to_data(data, device.backing), None, shape, backend), 0)
    if data.device != device.backing or not data.is_contiguous():
        data = backend.to_data(data, device.backing)
    return Value(DeviceData(data), 0)


def to_functional(tensor: LazyTensor) -> torch.Tensor:
    return torch._to_functional_tensor(tensor)


def inner(tensor: torch.Tensor) -> LazyTensor:
    """The current inner ``LazyTensor`` of a user-facing lazy tensor (after pending views)."""
    if type(tensor) is LazyTensor:
        return tensor
    if not torch._is_functional_tensor(tensor):
        raise TypeError(f"lazygen: not a lazy tensor: {type(tensor).__name__} on {tensor.device}")
    torch._sync(tensor)
    return torch._from_functional_tensor(tensor)


def is_lazy(tensor) -> bool:
    return isinstance(tensor, torch.Tensor) and tensor.device.type == settings.device_type
