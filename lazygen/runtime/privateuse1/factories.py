"""The PrivateUse1 kernels through which factories and ``.to(<lazy device>)`` create lazy
tensors, and the PrivateUse1 backend fallback. They see no functional wrapper (they run at
the device key), so they add one to what they return."""

from __future__ import annotations

import sys
import warnings

import torch

from ..devices import device_from
from ..dispatch.fallback import eager_fallback
from ..errors import LazygenRuntimeError
from ..ops import device_copies
from ..state import settings
from ..tracing.tensor import (
    LazyTensor,
    from_data,
    inner,
    to_functional,
    unsupported_layout,
    unsupported_nested,
)
from . import subclass_reentry

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
    if not exclude.has(_K.Functionalize) or exclude.has(_K.Python):
        return False
    if not exclude.has(_K.PythonTLSSnapshot):
        return True
    # A dispatch mode's handler (FlopCounterMode, aot_autograd's) runs its op with every key
    # above Python excluded, Functionalize among them, whether functionalization unwrapped
    # the op's tensors on the way or there were none (a factory called under the mode).
    # Functionalization's unwrapped lazy tensors are dispatched by LazyTensor itself: below
    # functionalization exactly when that is on the way here.
    return _in_lazy_dispatch()


_K = torch._C.DispatchKey
_LAZY_DISPATCH = LazyTensor.__torch_dispatch__.__func__.__code__


def _in_lazy_dispatch() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code is _LAZY_DISPATCH:
            return True
        frame = frame.f_back
    return False


def _check_layout(layout) -> None:
    if layout is not None and layout != torch.strided:
        raise unsupported_layout(layout)


def _empty_memory_format(
    size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    _check_layout(layout)
    dev = device_from(device)
    return _lazy_result(
        device_copies.empty_memory_format(
            size, dtype=dtype, device=dev.torch_device, memory_format=memory_format
        )
    )


def _empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    _check_layout(layout)
    dev = device_from(device)
    return _lazy_result(
        device_copies.empty_strided(size, stride, dtype=dtype, device=dev.torch_device)
    )


def _to_copy(
    self,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking=False,
    memory_format=None,
):
    _check_layout(layout)
    source = inner(self) if torch._is_functional_tensor(self) else self
    result = device_copies._to_copy(source, dtype=dtype, device=device, memory_format=memory_format)
    return _lazy_result(result) if type(result) is LazyTensor else result


_TO_COPY = torch.ops.aten._to_copy.default
_FUNCTIONALIZE = torch._C.DispatchKey.Functionalize
_SKIP_FUNCTIONALIZE = torch._C.DispatchKeySet(_FUNCTIONALIZE)
#: Device types whose ``_to_copy`` results torch's own functionalization kernel re-wraps.
_TORCH_FUNCTIONAL_DEVICES = ("xla", "lazy")


def _to_copy_functionalize(
    self,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking=False,
    memory_format=None,
):
    """``_to_copy`` at the Functionalize key, in place of torch's own kernel.

    The one place that keeps every lazy ``.to()`` result a functional wrapper. torch's kernel
    (FunctionalizeFallbackKernel.cpp) unwraps the source, copies below functionalization and
    re-wraps the result, except outside a functionalization pass (no Functionalize in TLS)
    for a target device other than XLA or Lazy, where "the functionalization pass ends".
    The lazy device is PrivateUse1, so every dtype or memory-format change of a lazy tensor
    (``.bool()``, ``.half()``, ``.to(dtype)``) came back as the bare inner ``LazyTensor``:
    ops on it skipped functionalization and its views crashed the process in ``torch._sync``.
    This kernel does what torch's does, with the lazy device among the devices that stay
    functional; copies to other devices (``.cpu()``) still end the pass as before."""
    if torch._is_functional_tensor(self):
        torch._sync(self)
        source = torch._from_functional_tensor(self)
    else:
        source = self
    with torch._C._ExcludeDispatchKeyGuard(_SKIP_FUNCTIONALIZE):
        out = _TO_COPY(
            source,
            dtype=dtype,
            layout=layout,
            device=device,
            pin_memory=pin_memory,
            non_blocking=non_blocking,
            memory_format=memory_format,
        )
    if not torch._C._dispatch_tls_local_include_set().has(_FUNCTIONALIZE):
        target = self.device.type if device is None else torch.device(device).type
        if target != settings.device_type and target not in _TORCH_FUNCTIONAL_DEVICES:
            return out
    return to_functional(out)


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
    if device is not None and torch.device(device).type == settings.device_type:
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


def _quantized_empty(*args, **kwargs):
    """A quantized tensor's storage on the lazy device (``q.to(<lazy device>)`` allocates
    one): torch had no kernel and said so in terms of dispatch keys."""
    name = settings.device_type
    raise LazygenRuntimeError(
        f"lazygen: quantized tensors cannot be made on or moved to the {name} device; call "
        f".dequantize() first and move the float tensor (torch.quantize_per_tensor of a {name} "
        "tensor gives a quantized result there)"
    )


def _nested_to_copy(self, *args, **kwargs):
    """``_to_copy`` of a nested tensor onto lazygen (torch has no kernel for that key)."""
    raise unsupported_nested()


def _copy_from(self, dst, non_blocking=False):
    if type(dst) is not LazyTensor and torch._is_functional_tensor(dst):
        # functionalization handles the lazy destination; a tensor subclass's handler
        # (funcol's AsyncCollectiveTensor) gets here with it excluded: re-enable it
        include = torch._C._dispatch_tls_local_include_set()
        exclude = torch._C._dispatch_tls_local_exclude_set()
        with torch._C._ForceDispatchKeyGuard(include, exclude - _REENABLED):
            dst.copy_(self)
        return dst
    source = inner(self) if torch._is_functional_tensor(self) else self
    return device_copies._copy_from(source, dst, non_blocking)


def _copy_from_and_resize(self, dst):
    if dst.shape != self.shape:
        dst.resize_(self.shape)
    return _copy_from(self, dst)


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
    if (
        not under_functionalize
        and subclass_reentry.can_reenter()
        and subclass_reentry.has_functional_tensor(args, kwargs)
    ):
        # an op a tensor subclass's handler ran on a lazy tensor (subclass_reentry.py)
        return subclass_reentry.reenter(op, args, kwargs)
    with torch._C._ForceDispatchKeyGuard(include, exclude - _REENABLED):
        return eager_fallback(
            op, args, kwargs, functional=not under_functionalize, write_back=not under_functionalize
        )


_REENABLED = torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize) | torch._C.DispatchKeySet(
    torch._C.DispatchKey.ADInplaceOrView
)


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


_CTC_LOSS = torch.ops.aten.ctc_loss.Tensor


def _ctc_loss(
    log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False
):
    """``ctc_loss`` with host length tensors, as CUDA takes them. Lazy inputs are functional
    wrappers, which ATen sends down its tensor-subclass branch; that branch divides the
    device loss by ``target_lengths`` and so refused host lengths. CUDA's branch reads the
    lengths on the host; here they move to the loss's device first."""
    device = log_probs.device
    input_lengths = input_lengths.to(device)
    target_lengths = target_lengths.to(device)
    return _CTC_LOSS._op_dk(
        torch._C.DispatchKey.CompositeImplicitAutograd,
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank,
        reduction,
        zero_infinity,
    )


def register() -> list:
    """Register the PrivateUse1 kernels and the backend fallback; returns the libraries
    (kept alive by the caller: a dropped library unregisters its kernels)."""
    libraries = []
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("empty.memory_format", _empty_memory_format, "PrivateUse1")
    lib.impl("empty_strided", _empty_strided, "PrivateUse1")
    lib.impl("_to_copy", _to_copy, "PrivateUse1")
    with warnings.catch_warnings():  # "Overriding a previously registered kernel": intended
        warnings.simplefilter("ignore", UserWarning)
        lib.impl("_to_copy", _to_copy_functionalize, "Functionalize")
    lib.impl("_copy_from", _copy_from, "PrivateUse1")
    lib.impl("_copy_from_and_resize", _copy_from_and_resize, "PrivateUse1")
    lib.impl("ctc_loss.Tensor", _ctc_loss, "AutogradPrivateUse1")
    for key in _SPARSE_KEYS:
        lib.impl("_to_copy", _sparse_to_copy, key)
    for key in ("SparsePrivateUse1", "SparseCsrPrivateUse1"):  # sparse layouts on lazygen
        lib.impl("_to_copy", _sparse_to_copy, key)
        lib.impl("empty.memory_format", _sparse_empty, key)
    lib.impl("_to_copy", _nested_to_copy, "NestedTensorPrivateUse1")
    for name in ("empty.memory_format", "empty_quantized", "_empty_affine_quantized"):
        lib.impl(name, _quantized_empty, "QuantizedPrivateUse1")
    for name in HOST_FACTORIES:
        packet, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload or "default")
        lib.impl(name, _host_factory(op), "PrivateUse1")
    libraries.append(lib)
    fallback_lib = torch.library.Library("_", "IMPL")
    fallback_lib.fallback(_backend_fallback, "PrivateUse1")
    libraries.append(fallback_lib)
    return libraries
