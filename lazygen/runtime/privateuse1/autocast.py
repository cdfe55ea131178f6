"""Autocast on the lazy device with CUDA's policy.

``torch.autocast(device_type=<lazy>)`` turns the ``AutocastPrivateUse1`` dispatch key on;
without kernels there, every op raised. PyTorch's C++ registers CUDA's policy for
``AutocastCUDA`` only, from the op lists in ``ATen/autocast_mode.h``
(``AT_FORALL_LOWER_PRECISION_FP``, ``AT_FORALL_FP32``, ``AT_FORALL_FP32_SET_OPT_DTYPE``,
``AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE``, ``AT_FORALL_PROMOTE``, plus the cuDNN
convolutions and the banned ``binary_cross_entropy`` in ``autocast_mode.cpp``). The same
lists, as data, get Python kernels here that cast as ``WrapFunction_`` does and redispatch
with the autocast key excluded; every other op falls through, as on CUDA. A kernel runs
only inside an autocast region of the lazy device (the key is excluded otherwise), so the
tracing hot path is untouched.

Like CUDA, casts apply to "eligible" tensors: floating point, not float64, on the lazy
device. Unlike CUDA, casts of weights are not cached across ops within a region: each op
traces its own cast node (the values are identical; the compiled graph merges nothing).
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from .. import torch_compat
from ..errors import LazygenRuntimeError
from ..state import settings

KEY = "AutocastPrivateUse1"

LOWER_PRECISION_FP = (
    "_convolution.deprecated",
    "_convolution",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_tbc",
    "conv_transpose1d",
    "conv_transpose2d.input",
    "conv_transpose3d.input",
    "convolution",
    "prelu",
    "addmm",
    "addmv",
    "addr",
    "matmul",
    "einsum",
    "mm",
    "mv",
    "linalg_vecdot",
    "linear",
    "addbmm",
    "baddbmm",
    "bmm",
    "chain_matmul",
    "linalg_multi_dot",
    "_thnn_fused_lstm_cell",
    "_thnn_fused_gru_cell",
    "lstm_cell",
    "gru_cell",
    "rnn_tanh_cell",
    "rnn_relu_cell",
    "_scaled_dot_product_flash_attention",
    "scaled_dot_product_attention",
    "cudnn_convolution",  # the two are added by autocast_mode.cpp for CUDA
    "cudnn_convolution_transpose",
)

FP32 = (
    "acos",
    "asin",
    "cosh",
    "erfinv",
    "exp",
    "expm1",
    "log",
    "log10",
    "log2",
    "log1p",
    "reciprocal",
    "rsqrt",
    "sinh",
    "tan",
    "pow.Tensor_Scalar",
    "pow.Tensor_Tensor",
    "pow.Scalar",
    "softplus",
    "layer_norm",
    "native_layer_norm",
    "rms_norm",
    "group_norm",
    "frobenius_norm.dim",
    "nuclear_norm",
    "nuclear_norm.dim",
    "cosine_similarity",
    "poisson_nll_loss",
    "cosine_embedding_loss",
    "nll_loss",
    "nll_loss2d",
    "hinge_embedding_loss",
    "kl_div",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "mse_loss",
    "margin_ranking_loss",
    "multilabel_margin_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "multi_margin_loss",
    "binary_cross_entropy_with_logits",
    "dist",
    "pdist",
    "cdist",
    "renorm",
    "logsumexp",
    "upsample_nearest1d",
    "_upsample_nearest_exact1d",
    "upsample_nearest2d",
    "_upsample_nearest_exact2d",
    "upsample_nearest3d",
    "_upsample_nearest_exact3d",
    "upsample_linear1d",
    "upsample_bilinear2d",
    "_upsample_bilinear2d_aa",
    "upsample_trilinear3d",
    "upsample_bicubic2d",
    "_upsample_bicubic2d_aa",
    *torch_compat.autocast_added("fp32"),  # ops later releases added
)

FP32_SET_OPT_DTYPE = (
    "prod",
    "prod.dim_int",
    "softmax.int",
    "log_softmax.int",
    "cumprod",
    "cumsum",
    "linalg_vector_norm",
    "linalg_matrix_norm",
    "linalg_matrix_norm.str_ord",
    "sum",
    "sum.dim_IntList",
)

# registered overload -> the overload called with ``dtype`` appended
FP32_APPEND_DTYPE = MappingProxyType(
    {
        "norm.Scalar": "norm.ScalarOpt_dtype",
        "norm.ScalarOpt_dim": "norm.ScalarOpt_dim_dtype",
    }
)

PROMOTE = (
    "addcdiv",
    "addcmul",
    "atan2",
    "bilinear",
    "cross",
    "dot",
    "vdot",
    "grid_sampler",
    "index_put",
    "tensordot",
    "scatter_add",
)

BANNED = MappingProxyType(
    {
        "binary_cross_entropy": (
            "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
            "autocast.\nMany models use a sigmoid layer right before the binary cross entropy "
            "layer.\nIn this case, combine the two layers using "
            "torch.nn.functional.binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss."
            "  binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast."
        ),
    }
)

_EXCLUDE = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)


def overload(name: str) -> torch._ops.OpOverload:
    packet, _, name_overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), name_overload or "default")


def _eligible(arg) -> bool:
    return (
        isinstance(arg, torch.Tensor)
        and arg.device.type == settings.device_type
        and arg.is_floating_point()
        and arg.dtype != torch.float64
    )


def _cast(arg, dtype):
    if _eligible(arg):
        return arg if arg.dtype == dtype else arg.to(dtype)
    if type(arg) in (list, tuple):
        return type(arg)(_cast(a, dtype) for a in arg)
    return arg


def _cast_all(args, kwargs, dtype):
    return [_cast(a, dtype) for a in args], {k: _cast(v, dtype) for k, v in kwargs.items()}


def _lower_precision_fp(op):
    def kernel(*args, **kwargs):
        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            args, kwargs = _cast_all(args, kwargs, torch.get_autocast_dtype(settings.device_type))
            return op(*args, **kwargs)

    return kernel


def _fp32(op):
    def kernel(*args, **kwargs):
        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            args, kwargs = _cast_all(args, kwargs, torch.float32)
            return op(*args, **kwargs)

    return kernel


def _fp32_set_opt_dtype(op):
    """float32 output unless the caller chose a dtype, when the first argument is eligible;
    no cast of the inputs (the op's dtype argument does it)."""
    position = next(i for i, a in enumerate(op._schema.arguments) if a.name == "dtype")

    def kernel(*args, **kwargs):
        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            if _eligible(args[0]):
                if len(args) > position:
                    if args[position] is None:
                        args = (*args[:position], torch.float32, *args[position + 1 :])
                elif kwargs.get("dtype") is None:
                    kwargs = {**kwargs, "dtype": torch.float32}
            return op(*args, **kwargs)

    return kernel


def _fp32_append_dtype(redispatch):
    def kernel(*args, **kwargs):
        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            dtype = torch.float32 if _eligible(args[0]) else args[0].dtype
            return redispatch(*args, **kwargs, dtype=dtype)

    return kernel


def _promote_type(objs, lower: torch.dtype) -> torch.dtype:
    current = lower
    for obj in objs:
        if type(obj) in (list, tuple):
            current = _promote_type(obj, current)
        elif _eligible(obj):
            if current == torch.float32 or obj.dtype == torch.float32:
                current = torch.float32
            elif obj.dtype != lower:
                raise LazygenRuntimeError(
                    f"lazygen autocast: cannot promote {obj.dtype} with {lower} (as on CUDA, "
                    "'promote' ops take float32 or the autocast dtype); cast the inputs first"
                )
    return current


def _promote(op):
    def kernel(*args, **kwargs):
        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            lower = torch.get_autocast_dtype(settings.device_type)
            dtype = _promote_type((*args, *kwargs.values()), lower)
            args, kwargs = _cast_all(args, kwargs, dtype)
            return op(*args, **kwargs)

    return kernel


def _banned(message: str):
    def kernel(*args, **kwargs):
        raise LazygenRuntimeError(message)

    return kernel


def kernels() -> dict[str, object]:
    """The ``AutocastPrivateUse1`` kernel of every op CUDA's policy names, by op name."""
    table: dict[str, object] = {}
    for name in LOWER_PRECISION_FP:
        table[name] = _lower_precision_fp(overload(name))
    for name in FP32:
        table[name] = _fp32(overload(name))
    for name in FP32_SET_OPT_DTYPE:
        table[name] = _fp32_set_opt_dtype(overload(name))
    for name, target in FP32_APPEND_DTYPE.items():
        table[name] = _fp32_append_dtype(overload(target))
    for name in PROMOTE:
        table[name] = _promote(overload(name))
    for name, message in BANNED.items():
        table[name] = _banned(message)
    return table


def register() -> list:
    """Register the kernels and the fallthrough; returns the libraries to keep alive."""
    fallthrough = torch.library.Library("_", "IMPL")
    fallthrough.fallback(torch.library.fallthrough_kernel, KEY)
    lib = torch.library.Library("aten", "IMPL")
    for name, kernel in kernels().items():
        lib.impl(name, kernel, KEY)
    return [fallthrough, lib]
