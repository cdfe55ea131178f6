"""The ``lazygen`` device: PrivateUse1 renamed, its device module, guard and hooks, and the
PrivateUse1 kernels through which factories and ``.to("lazygen")`` create lazy tensors."""

from __future__ import annotations

import contextlib
import gc
import os
import threading

import torch

from .config import settings
from .tensor import (
    DEVICE_TYPE,
    LazyDevice,
    LazyTensor,
    from_data,
    inner,
    to_functional,
    unsupported_layout,
)

_devices: dict[int, LazyDevice] = {}
_devices_lock = threading.Lock()
_initialized = False
_libraries: list = []


def get_device(index: int = 0) -> LazyDevice:
    device = _devices.get(index)
    if device is None:
        with _devices_lock:
            device = _devices.get(index)
            if device is None:
                device = LazyDevice(index, torch.device(settings.backing_device))
                _devices[index] = device
    return device


def default_device() -> LazyDevice:
    return get_device(_current_index)


def all_devices() -> list[LazyDevice]:
    return list(_devices.values())


def device_from(device) -> LazyDevice:
    """The ``LazyDevice`` of a ``device=`` argument (None: the current one)."""
    if device is None:
        return default_device()
    device = torch.device(device)
    return get_device(device.index if device.index is not None else _current_index)


_current_index = 0


class _DeviceModule:
    """``torch.lazygen``: what torch expects of a backend's device module."""

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def is_initialized() -> bool:
        return _initialized

    @staticmethod
    def _is_in_bad_fork() -> bool:
        return False

    @staticmethod
    def device_count() -> int:
        return max(1, len(_devices))

    @staticmethod
    def current_device() -> int:
        return _current_index

    @staticmethod
    def set_device(index) -> None:
        global _current_index
        _current_index = torch.device(DEVICE_TYPE, index).index if isinstance(index, int) else 0

    # Random numbers of lazy tensors come from the backing device's generator (fallback
    # ops and compiled graphs both run there), so the RNG API forwards to it. torch's own
    # helpers (e.g. `torch.testing._utils.freeze_rng_state`) call these for PrivateUse1.
    @staticmethod
    def _backing_rng():
        backing = settings.backing_device
        return torch.cuda if backing.startswith("cuda") else torch.random

    @staticmethod
    def get_rng_state(device=None) -> torch.Tensor:
        return _DeviceModule._backing_rng().get_rng_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor, device=None) -> None:
        _DeviceModule._backing_rng().set_rng_state(state)

    @staticmethod
    def manual_seed(seed: int) -> None:
        # torch.manual_seed seeds the CPU generator and then calls this; a CPU backing
        # device is therefore already seeded (and calling back would recurse).
        if settings.backing_device.startswith("cuda"):
            torch.cuda.manual_seed(seed)

    @staticmethod
    def manual_seed_all(seed: int) -> None:
        _DeviceModule.manual_seed(seed)

    @staticmethod
    def initial_seed() -> int:
        return _DeviceModule._backing_rng().initial_seed()

    @staticmethod
    def synchronize(device=None) -> None:
        from . import executor

        executor.mark_step()

    @staticmethod
    def get_amp_supported_dtype():
        return [torch.float16, torch.bfloat16]


class _Hooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self) -> bool:
        return True

    def has_primary_context(self, device_index: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class _Guard(torch._C._acc.DeviceGuard):
    def type_(self):
        return torch._C._autograd.DeviceType.PrivateUse1


# PrivateUse1 kernels: they see no functional wrapper, so they add one. ---------------------


def _lazy_result(inner_tensor: LazyTensor) -> torch.Tensor:
    """Wrapped for functionalization, unless a functionalization kernel called us (it wraps)."""
    if _below_functionalization():
        return inner_tensor
    return to_functional(inner_tensor)


def _below_functionalization() -> bool:
    # A functionalization kernel redispatches with Functionalize excluded; torch.tensor()
    # builds its data with Functionalize *and* Python excluded and expects a finished tensor.
    exclude = torch._C._dispatch_tls_local_exclude_set()
    return exclude.has(torch._C.DispatchKey.Functionalize) and not exclude.has(
        torch._C.DispatchKey.Python
    )


def _check_layout(layout) -> None:
    if layout is not None and layout != torch.strided:
        raise unsupported_layout(layout)


def _empty_memory_format(
    size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    from .ts_backend import kernels

    _check_layout(layout)
    dev = device_from(device)
    return _lazy_result(kernels.empty_memory_format(size, dtype=dtype, device=dev.torch_device))


def _empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    from .ts_backend import kernels

    _check_layout(layout)
    dev = device_from(device)
    return _lazy_result(kernels.empty_strided(size, stride, dtype=dtype, device=dev.torch_device))


def _to_copy(
    self,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking=False,
    memory_format=None,
):
    from .ts_backend import kernels

    _check_layout(layout)
    source = inner(self) if torch._is_functional_tensor(self) else self
    result = kernels._to_copy(source, dtype=dtype, device=device)
    return _lazy_result(result) if type(result) is LazyTensor else result


_TO_COPY = torch.ops.aten._to_copy.default
_SPARSE_KEYS = ("SparseCPU", "SparseCsrCPU")  # sparse sources moved to lazygen


def _sparse_to_copy(
    self,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking=False,
    memory_format=None,
):
    """``_to_copy`` of a sparse CPU tensor: refused for the lazygen device (which would
    otherwise build a sparse tensor of lazy parts that no op can use), else as before."""
    if device is not None and torch.device(device).type == DEVICE_TYPE:
        raise unsupported_layout(layout if layout not in (None, torch.strided) else self.layout)
    return _TO_COPY._op_dk(
        torch._C.DispatchKey.CompositeExplicitAutograd,
        self,
        dtype=dtype,
        layout=layout,
        device=device,
        pin_memory=pin_memory,
        non_blocking=non_blocking,
        memory_format=memory_format,
    )


def _sparse_empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    raise unsupported_layout(layout)


def _copy_from(self, dst, non_blocking=False):
    from .ts_backend import kernels

    if type(dst) is not LazyTensor and torch._is_functional_tensor(dst):
        dst.copy_(self)  # functionalization handles the lazy destination
        return dst
    source = inner(self) if torch._is_functional_tensor(self) else self
    return kernels._copy_from(source, dst, non_blocking)


def _copy_from_and_resize(self, dst):
    if dst.shape != self.shape:
        dst.resize_(self.shape)
    return _copy_from(self, dst)


def _host(arg, device: LazyDevice):
    """Eager value of an argument for the backend-level fallback."""
    if isinstance(arg, torch.Tensor) and arg.device.type == DEVICE_TYPE:
        lazy = inner(arg)
        from . import executor

        executor.sync([lazy])
        return lazy._value.node.data
    if type(arg) in (list, tuple):
        return type(arg)(_host(a, device) for a in arg)
    if isinstance(arg, (torch.device, str)) and str(arg).startswith(DEVICE_TYPE):
        return device.backing
    return arg


def _backend_fallback(op, *args, **kwargs):
    """Ops that reach the ``lazygen`` key without functionalization (``out=`` variants called
    from inside composite kernels, factories): run eagerly, write ``out=`` back through
    functionalization, wrap other results."""
    # Composite kernels may call us with functionalization (and autograd) excluded; the
    # arguments are still functional wrappers, so re-enable it while touching them.
    include = torch._C._dispatch_tls_local_include_set()
    exclude = torch._C._dispatch_tls_local_exclude_set()
    # Under a functionalization kernel, results (out= included) must be plain inner tensors:
    # functionalization itself points the functional ``out=`` argument at them.
    under_functionalize = _below_functionalization()
    with torch._C._ForceDispatchKeyGuard(include, exclude - _REENABLED):
        return _backend_fallback_impl(op, args, kwargs, under_functionalize)


_REENABLED = torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize) | torch._C.DispatchKeySet(
    torch._C.DispatchKey.ADInplaceOrView
)


def _backend_fallback_impl(op, args, kwargs, under_functionalize):
    from . import fallback, metrics

    name, mutated_positions, mutated_kwargs = fallback._op_info(op)
    metrics.count(name)
    device = default_device()
    for arg in list(args) + list(kwargs.values()):
        if isinstance(arg, torch.Tensor) and arg.device.type == DEVICE_TYPE:
            device = get_device(arg.device.index or 0)
            break
    host_args = [_host(a, device) for a in args]
    host_kwargs = {k: _host(v, device) for k, v in kwargs.items()}
    targets = [(host_args, i, args[i]) for i in mutated_positions if i < len(args)]
    targets += [(host_kwargs, k, kwargs[k]) for k in mutated_kwargs if k in kwargs]
    aliases = {}
    for container, key, original in targets:
        if isinstance(original, torch.Tensor) and original.device.type == DEVICE_TYPE:
            container[key] = container[key].clone()
            aliases[id(container[key])] = original
    result = op(*host_args, **host_kwargs)
    if under_functionalize:
        aliases = {}
    with torch.no_grad():
        for container, key, original in targets:
            if id(container[key]) in aliases and not under_functionalize:
                new = container[key]
                if original.shape != new.shape:
                    original.resize_(new.shape)
                original.copy_(new)

    def wrap(obj):
        if isinstance(obj, torch.Tensor):
            alias = aliases.get(id(obj))
            if alias is not None:
                return alias
            lazy = from_data(obj, device)
            return lazy if under_functionalize else to_functional(lazy)
        if type(obj) in (list, tuple):
            return type(obj)(wrap(o) for o in obj)
        return obj

    return wrap(result)


# Factories whose composite kernels fill an empty ``out=`` tensor after resizing it; a lazy
# tensor's sizes cannot change, so these run on the backing device and upload the result.
HOST_FACTORIES = (
    "arange",
    "arange.start",
    "arange.start_step",
    "range.step",
    "linspace",
    "logspace",
    "randperm",
    "randperm.generator",
    "eye",
    "eye.m",
    "kaiser_window",
    "kaiser_window.periodic",
    "kaiser_window.beta",
)


def _host_factory(op):
    def kernel(*args, **kwargs):
        device = device_from(kwargs.get("device"))
        kwargs["device"] = device.backing
        return _lazy_result(from_data(op(*args, **kwargs), device))

    return kernel


def _register_device_kernels() -> None:
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("empty.memory_format", _empty_memory_format, "PrivateUse1")
    lib.impl("empty_strided", _empty_strided, "PrivateUse1")
    lib.impl("_to_copy", _to_copy, "PrivateUse1")
    lib.impl("_copy_from", _copy_from, "PrivateUse1")
    lib.impl("_copy_from_and_resize", _copy_from_and_resize, "PrivateUse1")
    for key in _SPARSE_KEYS:
        lib.impl("_to_copy", _sparse_to_copy, key)
    for key in ("SparsePrivateUse1", "SparseCsrPrivateUse1"):  # sparse layouts on lazygen
        lib.impl("_to_copy", _sparse_to_copy, key)
        lib.impl("empty.memory_format", _sparse_empty, key)
    for name in HOST_FACTORIES:
        packet, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload or "default")
        lib.impl(name, _host_factory(op), "PrivateUse1")
    _libraries.append(lib)
    fallback_lib = torch.library.Library("_", "IMPL")
    fallback_lib.fallback(_backend_fallback, "PrivateUse1")
    _libraries.append(fallback_lib)


_autograd_lib = None


def register_autograd_kernels(kernels: dict) -> None:
    """Install autograd kernels for the lazy device (the ``autograd`` backend section)."""
    global _autograd_lib
    if not _initialized:
        return  # init() installs registry.AUTOGRAD_KERNELS
    if _autograd_lib is None:
        _autograd_lib = torch.library.Library("aten", "IMPL")
        _libraries.append(_autograd_lib)
    for op, fn in kernels.items():
        name = op._schema.name.split("::", 1)[-1]
        if op._overloadname != "default":
            name = f"{name}.{op._overloadname}"
        _autograd_lib.impl(name, fn, "AutogradPrivateUse1")


def init() -> None:
    """Set up the ``lazygen`` device once per process (idempotent)."""
    global _initialized
    if _initialized:
        return
    with _devices_lock:
        if _initialized:
            return
        from . import fallback, printing, registry  # noqa: F401  (installs hooks)

        backend_name = torch._C._get_privateuse1_backend_name()
        if backend_name not in ("privateuseone", DEVICE_TYPE):
            raise RuntimeError(
                f"lazygen: PrivateUse1 is already taken by {backend_name!r}; only one "
                "PrivateUse1 backend can exist per process"
            )
        if backend_name != DEVICE_TYPE:
            torch.utils.rename_privateuse1_backend(DEVICE_TYPE)
            torch.utils.generate_methods_for_privateuse1_backend()
            torch._register_device_module(DEVICE_TYPE, _DeviceModule)
            torch._C._acc.register_python_privateuseone_hook(_Hooks())
            torch._C._acc.register_python_privateuseone_device_guard(_Guard())
        _register_device_kernels()
        printing.install()
        registry.load_defaults()
        _initialized = True
    from . import registry

    register_autograd_kernels(registry.AUTOGRAD_KERNELS)
    _freeze_startup_objects()


def _freeze_startup_objects() -> None:
    """Move every object alive now (torch's and lazygen's modules, the generated kernels:
    about 290k objects) out of the cyclic GC's reach with ``gc.freeze()``.

    Each traced op leaves a few GC-tracked objects (node, value, tensors) alive until the
    sync, so tracing triggers full collections; each full collection walks the whole heap,
    150-190 ms here, nearly all of it torch's import-time objects. Tracing a 10k-op graph
    paid one such pause (17 us per op, 2.4x the op itself). Frozen objects are never
    collected, which costs nothing for modules but would keep cyclic garbage made of
    objects that were alive before ``init()`` for good: ``LAZYGEN_GC_FREEZE=0`` turns
    this off (ML servers such as vLLM freeze their start-up heap for the same reason).

    ``torch._dynamo`` is imported first: torch imports it on the first optimizer step or
    random op (their ``_disable_dynamo`` wrappers), and its ~120k objects (sympy, mpmath,
    ...) would otherwise stay in every full collection. Training programs pay that import
    (~0.9 s) anyway; others pay it here."""
    if os.environ.get("LAZYGEN_GC_FREEZE", "1") == "0":
        return
    with contextlib.suppress(ImportError):
        import torch._dynamo  # noqa: F401
    gc.collect()  # what is garbage already is freed, not frozen
    gc.freeze()
