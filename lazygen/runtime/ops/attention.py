"""``scaled_dot_product_attention`` as one lazy op forward and one backward.

ATen picks an attention kernel per device type through a C++ dispatch stub that only the
CPU, CUDA and C++ backends can fill; every other device takes the math path, so each
attention call of a transformer traced dozens of small ops forward and backward (a large
share of a ``TransformerDecoder`` step: docs/benchmarks.md, "Measurements behind the
code"). The lazy device therefore registers its own
``scaled_dot_product_attention`` at its autograd key: where eager on the CPU would take its
fused (flash) kernel for the same arguments, it calls
``_scaled_dot_product_fused_attention_overrideable``, the op ATen provides for such
backends, whose autograd formula calls its backward: one IR node each (the neutral ops
below), which the backends running torch's kernels lower to the CPU's fused kernels
(``_scaled_dot_product_flash_attention_for_cpu`` and its backward), so results equal
eager on the CPU. Everywhere else it runs ATen's composite (math) path.

Scope: a CPU backing device (a CUDA backing device keeps the math path); dropout, grouped
query attention, 3-D masks and masks that need a gradient keep the math path, as on the CPU.

The two nodes are what a backend sees of attention: the neutral ops ``lazygen::attention``
(output, and the logsumexp of each query's scores) and ``lazygen::attention_backward``
(query, key and value gradients), documented in ``attention_op`` with a reference
decomposition into plain ops (``attention_reference``). A backend lowers them natively
(the jax backend does, in plain ``jnp``), decomposes them (``LoweringContext.
decomposed_ops``), or declines them: refusing any of ``declinable()``
(``Backend.refused_ops``) makes its devices take ATen's math path instead, attention
decomposed into plain ops (matmul, softmax...) that are traced, and refused, one by one.
The backends that run torch's kernels lower the nodes to the CPU's flash kernels
(``attention_op.TORCH_CPU_LOWERINGS``), so results equal eager on the CPU.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import torch
from torch.nn.attention import SDPBackend
from torch.utils._python_dispatch import _disable_current_modes

from .. import devices, state
from .. import kernel_support as rt
from ..dispatch import call, refusals
from ..errors import LazygenRuntimeError
from ..ir import Node
from ..lowering_context import overload_of
from ..tracing.tensor import LazyTensor, new_lazy
from . import attention_op, attention_reference

aten = torch.ops.aten
_FLASH = int(SDPBackend.FLASH_ATTENTION.value)
_CPU_FLASH = attention_op.CPU_FLASH
_CPU_FLASH_BACKWARD = attention_op.CPU_FLASH_BACKWARD


def _shapes(*values) -> tuple:
    """``(dtype, sizes)`` of each operand value; None for an absent mask."""
    pairs = []
    for value in values:
        shape = None if value is None else value.node.shapes[value.index]
        pairs.append(None if shape is None else (shape.dtype, tuple(shape.sizes)))
    return tuple(pairs)


class Attention(Node):
    """``lazygen::attention``: ``(output, logsumexp)`` of attention over ``(query, key,
    value[, attn_mask])``; attributes ``(is_causal, scale)`` (see ``attention_op``)."""

    __slots__ = ()
    op_kind = attention_op.ATTENTION
    op_name = "attention"
    schema = attention_op.SCHEMA

    def lower(self, ctx):
        query, key, value, *mask = self.operands
        is_causal, scale = self.attrs
        mask = mask[0] if mask else None
        if ctx.decomposes(self.op_kind):
            shapes = _shapes(query, key, value, mask)
            values = [ctx.tensor(t) for t in (query, key, value)]
            mask_value = None if mask is None else ctx.tensor(mask)
            return attention_reference.lower_forward(
                ctx, *values, mask_value, is_causal, scale, shapes
            )
        args = [ctx.tensor(query), ctx.tensor(key), ctx.tensor(value), ctx.optional_tensor(mask)]
        options = {"is_causal": ctx.constant(is_causal), "scale": ctx.constant(scale)}
        return ctx.call("lazygen::attention", args, options, 2)


class AttentionBackward(Node):
    """``lazygen::attention_backward``: ``(grad_query, grad_key, grad_value)`` from
    ``(grad_output, query, key, value, output, logsumexp[, attn_mask])``; attributes
    ``(is_causal, scale)`` (see ``attention_op``)."""

    __slots__ = ()
    op_kind = attention_op.ATTENTION_BACKWARD
    op_name = "attention_backward"
    schema = attention_op.BACKWARD_SCHEMA

    def lower(self, ctx):
        tensors = self.operands[:6]
        mask = self.operands[6] if len(self.operands) > 6 else None
        is_causal, scale = self.attrs
        if ctx.decomposes(self.op_kind):
            grad_out, query, key, value = tensors[:4]
            shapes = _shapes(grad_out, query, key, value, mask)
            values = [ctx.tensor(t) for t in (grad_out, query, key, value)]
            mask_value = None if mask is None else ctx.tensor(mask)
            return attention_reference.lower_backward(
                ctx, *values, mask_value, is_causal, scale, shapes
            )
        args = [ctx.tensor(t) for t in tensors] + [ctx.optional_tensor(mask)]
        options = {"is_causal": ctx.constant(is_causal), "scale": ctx.constant(scale)}
        return ctx.call("lazygen::attention_backward", args, options, 3)


#: What ``metrics`` counts per node made, and the names it counted under before.
COUNTER = "lazy::attention"
BACKWARD_COUNTER = "lazy::attention_backward"
COUNTER_ALIASES = MappingProxyType(
    {
        "lazy::_scaled_dot_product_fused_attention_overrideable": COUNTER,
        "lazy::_scaled_dot_product_flash_attention_for_cpu": COUNTER,
        "lazy::_scaled_dot_product_fused_attention_overrideable_backward": BACKWARD_COUNTER,
        "lazy::_scaled_dot_product_flash_attention_for_cpu_backward": BACKWARD_COUNTER,
    }
)


class FusedChoices(dict):
    """Eager's choice of the CPU's fused attention kernel, by the arguments' kinds (a part
    of ``state.runtime``)."""


_SDPA = aten.scaled_dot_product_attention.default
_OVERRIDEABLE = aten._scaled_dot_product_fused_attention_overrideable.default

#: Refusing any of these takes the math path on the refusing backend's devices: the
#: neutral ops, and the names refusals took before them (torch's ops that the lazy
#: device's kernels turn into the neutral nodes).
DECLINABLE_NAMES = (
    attention_op.ATTENTION,
    attention_op.ATTENTION_BACKWARD,
    "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_fused_attention_overrideable",
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
)


@state.memo
def declinable() -> tuple:
    """The overloads of ``DECLINABLE_NAMES``: asked by lazy kernels only, so after
    ``init()`` defined the neutral ops (``attention_op.define``)."""
    return tuple(overload_of(name) for name in DECLINABLE_NAMES)


def _declined(query) -> bool:
    """Whether the backend of ``query``'s device refuses the attention nodes."""
    backend = devices.device_from(query.device).backend
    return any(refusals.refused_by(backend, op) for op in declinable())


def _stand_in(t):
    """An empty CPU tensor with ``t``'s metadata, for asking the CPU's choice."""
    if t is None:
        return None
    stand_in = torch.empty(t.shape, dtype=t.dtype)
    return stand_in.requires_grad_() if t.requires_grad else stand_in


def _cpu_would_fuse(query, key, value, attn_mask, dropout_p, is_causal, scale) -> bool:
    """Whether eager on the CPU takes its fused kernel for these arguments (cached). Sizes
    that are symbols (``torch.compile(dynamic=True)`` traces with them) answer no: the
    graph serves every size the symbols may take, and the math path is right for all."""
    tensors = (query, key, value, attn_mask)
    if any(type(size) is not int for t in tensors if t is not None for size in t.shape):
        return False
    cache_key = tuple(
        None if t is None else (t.dtype, tuple(t.shape), t.requires_grad) for t in tensors
    )
    cache_key += (dropout_p, is_causal, scale)
    choices = state.part(FusedChoices)
    fused = choices.get(cache_key)
    if fused is None:
        # Asked of real CPU tensors even while torch.compile traces with fake ones: a fake
        # tensor's choice is always the math path, which would give a compiled step other
        # ops (and slower ones) than the same step run on the lazy device uncompiled.
        with _disable_current_modes():
            choice = aten._fused_sdp_choice.default(
                *(_stand_in(t) for t in tensors), dropout_p, is_causal, scale=scale
            )
        fused = choices[cache_key] = choice == _FLASH
    return fused


def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    *,
    scale=None,
    enable_gqa=False,
):
    """The lazy device's ``scaled_dot_product_attention`` (an autograd kernel, on the
    user's tensors): the fused op where the CPU would fuse, else ATen's own composite
    (math) path, which also raises ATen's errors for invalid arguments."""
    fused = (
        not enable_gqa
        and dropout_p == 0.0
        and query.dtype == key.dtype == value.dtype
        and devices.device_from(query.device).backing.type == "cpu"
        and _cpu_would_fuse(query, key, value, attn_mask, dropout_p, is_causal, scale)
        and not _declined(query)
    )
    if not fused:
        return _SDPA.decompose(
            query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa
        )
    if attn_mask is not None and attn_mask.dtype == torch.bool:  # as ATen converts it
        attn_mask = torch.zeros_like(attn_mask, dtype=query.dtype).masked_fill_(
            attn_mask.logical_not(), float("-inf")
        )
    return aten._scaled_dot_product_fused_attention_overrideable.default(
        query, key, value, attn_mask, dropout_p, is_causal, False, scale=scale
    )[0]


def _lazy_int64_zero(device) -> LazyTensor:
    """The philox seed and offset the fused op returns (its backward ignores them: no
    dropout here), as a graph scalar: device data made at each call would be a fresh
    upload per attention call, and a captured graph takes fresh data from an op tagged
    ``nondeterministic_seeded`` for a random draw, which cut the compiled forward around
    every attention call (run op by op at each step: issue 48)."""
    return new_lazy(rt.scalar(0, device), device)


def fused_attention(
    query,
    key,
    value,
    attn_bias=None,
    dropout_p=0.0,
    is_causal=False,
    return_debug_mask=False,
    *,
    scale=None,
):
    """``_scaled_dot_product_fused_attention_overrideable``: the outputs ATen's autograd
    formula passes back to the backward; the ones only CUDA kernels fill stay empty."""
    if dropout_p != 0.0 or return_debug_mask:
        raise LazygenRuntimeError(
            "lazygen: fused attention with dropout or a debug mask is not supported; "
            "lazygen chooses the math path for those (this call bypassed the choice)"
        )
    device = rt.device_of(query, key, value)
    output, logsumexp = _attention(query, key, value, attn_bias, is_causal, scale)
    max_q, max_k = query.shape[-2], key.shape[-2]
    seed, offset = _lazy_int64_zero(device), _lazy_int64_zero(device)
    return output, logsumexp, None, None, max_q, max_k, seed, offset, None


def fused_attention_backward(
    grad_out,
    query,
    key,
    value,
    attn_bias,
    grad_input_mask,
    out,
    logsumexp,
    cum_seq_q,
    cum_seq_k,
    max_q,
    max_k,
    dropout_p,
    is_causal,
    philox_seed,
    philox_offset,
    *,
    scale=None,
):
    """``_scaled_dot_product_fused_attention_overrideable_backward``: the attention
    backward node for query, key and value; the attention bias's gradient, when asked for, from
    the softmax it recomputes (``dS = P * (dP - rowsum(dO * O))``, summed to the bias's
    shape)."""
    tensors = (grad_out, query, key, value, out, logsumexp)
    grad_query, grad_key, grad_value = _attention_backward(tensors, attn_bias, is_causal, scale)
    grad_bias = None
    if grad_input_mask[3] and attn_bias is not None:
        grad_bias = _bias_gradient(grad_out, query, key, value, attn_bias, out, logsumexp, scale)
    return grad_query, grad_key, grad_value, grad_bias


def cpu_flash_attention(
    query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None
):
    """``_scaled_dot_product_flash_attention_for_cpu`` itself, as the same node: graphs that
    Dynamo and aot_autograd captured on the CPU call it directly (``torch.compile(...,
    backend="lazygen")``), and without a kernel each call split the graph around an eager
    segment."""
    if dropout_p != 0.0:
        raise LazygenRuntimeError(
            "lazygen: _scaled_dot_product_flash_attention_for_cpu with dropout is not "
            "supported on the lazy device (its random mask is drawn inside the CPU kernel)"
        )
    return _attention(query, key, value, attn_mask, is_causal, scale)


def _attention(query, key, value, mask, is_causal, scale) -> tuple:
    """``(output, logsumexp)`` of one ``Attention`` node."""
    rt.count(COUNTER)
    device = rt.device_of(query, key, value)
    operands = tuple(rt.tensor(t, device) for t in (query, key, value))
    if mask is not None:
        operands += (rt.tensor(mask, device),)
    shapes = rt.infer_shapes(
        _CPU_FLASH, (query, key, value, 0.0, is_causal), {"attn_mask": mask, "scale": scale}
    )
    node = rt.make_node(Attention, operands, (is_causal, scale), shapes)
    return rt.wrap_tuple(node, device)


def cpu_flash_attention_backward(
    grad_out,
    query,
    key,
    value,
    out,
    logsumexp,
    dropout_p,
    is_causal,
    *,
    attn_mask=None,
    scale=None,
):
    """``_scaled_dot_product_flash_attention_for_cpu_backward`` as the backward node."""
    if dropout_p != 0.0:
        raise LazygenRuntimeError(
            "lazygen: _scaled_dot_product_flash_attention_for_cpu_backward with dropout is "
            "not supported on the lazy device"
        )
    tensors = (grad_out, query, key, value, out, logsumexp)
    return _attention_backward(tensors, attn_mask, is_causal, scale)


def _attention_backward(tensors, mask, is_causal, scale) -> tuple:
    """``(grad_query, grad_key, grad_value)`` of one ``AttentionBackward`` node, from
    ``(grad_out, query, key, value, out, logsumexp)``."""
    rt.count(BACKWARD_COUNTER)
    device = rt.device_of(*tensors[:2])
    operands = tuple(rt.tensor(t, device) for t in tensors)
    if mask is not None:
        operands += (rt.tensor(mask, device),)
    shapes = rt.infer_shapes(
        _CPU_FLASH_BACKWARD, (*tensors, 0.0, is_causal), {"attn_mask": mask, "scale": scale}
    )
    node = rt.make_node(AttentionBackward, operands, (is_causal, scale), shapes)
    return rt.wrap_tuple(node, device)


def _bias_gradient(grad_out, query, key, value, bias, out, logsumexp, scale):
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    key_t = call(aten.transpose_copy.int, key, -2, -1)
    scores = call(
        aten.add.Tensor, call(aten.mul.Scalar, call(aten.matmul.default, query, key_t), scale), bias
    )
    probs = call(
        aten.exp.default,
        call(aten.sub.Tensor, scores, call(aten.unsqueeze_copy.default, logsumexp, -1)),
    )
    grad_probs = call(aten.matmul.default, grad_out, call(aten.transpose_copy.int, value, -2, -1))
    row = call(aten.sum.dim_IntList, call(aten.mul.Tensor, grad_out, out), [-1], True)
    grad_scores = call(aten.mul.Tensor, probs, call(aten.sub.Tensor, grad_probs, row))
    return call(aten.sum_to_size.default, grad_scores, list(bias.shape))


#: Below functionalization, on inner lazy tensors.
ATTENTION_KERNELS = MappingProxyType(
    {
        aten._scaled_dot_product_fused_attention_overrideable.default: fused_attention,
        aten._scaled_dot_product_fused_attention_overrideable_backward.default: (
            fused_attention_backward
        ),
        _CPU_FLASH: cpu_flash_attention,
        _CPU_FLASH_BACKWARD: cpu_flash_attention_backward,
    }
)


def neutral_kernels() -> dict:
    """Kernels for the neutral ops called on lazy tensors (``torch.ops.lazygen.attention``
    in a user's code or a captured graph): one node each, as ``scaled_dot_product_attention``
    makes. Asked for once ``init()`` has defined them (``ops.runtime_tables``)."""

    def attention(query, key, value, attn_mask=None, *, is_causal=False, scale=None):
        return _attention(query, key, value, attn_mask, is_causal, scale)

    def attention_backward(
        grad_output, query, key, value, output, logsumexp, attn_mask=None, *,
        is_causal=False, scale=None,
    ):  # fmt: skip
        tensors = (grad_output, query, key, value, output, logsumexp)
        return _attention_backward(tensors, attn_mask, is_causal, scale)

    return {
        overload_of(attention_op.ATTENTION): attention,
        overload_of(attention_op.ATTENTION_BACKWARD): attention_backward,
    }


#: At the lazy device's autograd key, on the user's tensors.
ATTENTION_AUTOGRAD_KERNELS = MappingProxyType({_SDPA: scaled_dot_product_attention})
