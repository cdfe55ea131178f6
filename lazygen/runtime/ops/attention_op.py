"""The neutral attention ops: what a backend sees of ``scaled_dot_product_attention``.

Two ops of lazygen's own, ``lazygen::attention`` and ``lazygen::attention_backward``, one
IR node each (``attention.Attention``, ``attention.AttentionBackward``), documented here
and in docs/backend-guide.md ("Attention"):

``lazygen::attention(query, key, value, attn_mask=None, *, is_causal=False, scale=None)``
    ``query [..., L, E]``, ``key [..., S, E]``, ``value [..., S, Ev]`` of one floating
    dtype; ``attn_mask`` additive, of that dtype, broadcastable to ``[..., L, S]`` (a
    boolean mask is turned into 0 / -inf before the node); ``is_causal``: query ``i`` sees
    keys ``j <= i``; ``scale`` defaults to ``1 / sqrt(E)``. Returns ``output [..., L, Ev]``
    in the query's dtype and ``logsumexp [..., L]``, the natural-log sum over keys of
    ``exp(scaled scores + masks)``, in the accumulation dtype (float32 for float16,
    bfloat16 and float32 inputs; float64 for float64). No dropout.
``lazygen::attention_backward(grad_output, query, key, value, output, logsumexp,
attn_mask=None, *, is_causal=False, scale=None)``
    ``(grad_query, grad_key, grad_value)``, each of its input's dtype and sizes. ``output``
    and ``logsumexp`` are the forward's; a backend may use them or recompute (the
    reference recomputes the softmax). The mask's gradient is not part of it.

A backend lowers them natively (the jax backend: ``backends/jax/ops/nn.py``), decomposes
them (``LoweringContext.decomposed_ops``: ``attention_reference``), or refuses them
(``Backend.refused_ops``: ``"lazygen::attention"``; ATen's math path then traces plain
ops). They are ``torch.library`` ops too (``define()``, run by ``init()``), so their names
resolve (``torch.ops.lazygen.attention``), shape inference and runs op by op work, and a
backend that calls torch ops runs them as any op: on a CPU tensor of 4 dimensions through
torch's CPU flash kernels, exactly as eager; elsewhere through the reference. Backends that
run torch's kernels inside their graphs lower them straight to those CPU kernels instead
(``TORCH_CPU_LOWERINGS``), without calling back into Python for each run.
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from . import attention_reference as reference

ATTENTION = "lazygen::attention"
ATTENTION_BACKWARD = "lazygen::attention_backward"

#: The schemas (without the namespace), as ``torch.library`` defines them.
SCHEMA = (
    "attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, *, "
    "bool is_causal=False, float? scale=None) -> (Tensor output, Tensor logsumexp)"
)
BACKWARD_SCHEMA = (
    "attention_backward(Tensor grad_output, Tensor query, Tensor key, Tensor value, "
    "Tensor output, Tensor logsumexp, Tensor? attn_mask=None, *, bool is_causal=False, "
    "float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)"
)

aten = torch.ops.aten
CPU_FLASH = aten._scaled_dot_product_flash_attention_for_cpu.default
CPU_FLASH_BACKWARD = aten._scaled_dot_product_flash_attention_for_cpu_backward.default


def _on_cpu_flash(query) -> bool:
    """Whether torch's CPU flash kernel computes this call (it takes 4-D CPU inputs)."""
    return query.device.type == "cpu" and query.dim() == 4


def _attention(query, key, value, attn_mask=None, *, is_causal=False, scale=None):
    if _on_cpu_flash(query):
        return CPU_FLASH(query, key, value, 0.0, is_causal, attn_mask=attn_mask, scale=scale)
    return reference.forward(query, key, value, attn_mask, is_causal, scale)


def _attention_backward(
    grad_output, query, key, value, output, logsumexp, attn_mask=None, *, is_causal=False,
    scale=None,
):  # fmt: skip
    if _on_cpu_flash(query):
        return CPU_FLASH_BACKWARD(
            grad_output, query, key, value, output, logsumexp, 0.0, is_causal,
            attn_mask=attn_mask, scale=scale,
        )  # fmt: skip
    return reference.backward(grad_output, query, key, value, attn_mask, is_causal, scale)


def _attention_meta(query, key, value, attn_mask=None, *, is_causal=False, scale=None):
    sizes = query.shape[:-1]
    output = query.new_empty((*sizes, value.shape[-1]))
    return output, query.new_empty(sizes, dtype=reference.accumulation_dtype(query.dtype))


def _attention_backward_meta(
    grad_output, query, key, value, output, logsumexp, attn_mask=None, *, is_causal=False,
    scale=None,
):  # fmt: skip
    return query.new_empty(query.shape), key.new_empty(key.shape), value.new_empty(value.shape)


def define() -> torch.library.Library:
    """Define both ops in torch's ``lazygen`` namespace (``init()`` does, once): their
    implementation for every device (``CompositeExplicitAutograd``) and their meta kernels.
    No autograd formula: the lazy device's kernels make the backward node themselves."""
    library = torch.library.Library("lazygen", "DEF")
    library.define(SCHEMA)
    library.define(BACKWARD_SCHEMA)
    library.impl("attention", _attention, "CompositeExplicitAutograd")
    library.impl("attention_backward", _attention_backward, "CompositeExplicitAutograd")
    library.impl("attention", _attention_meta, "Meta")
    library.impl("attention_backward", _attention_backward_meta, "Meta")
    return library


# How backends that run torch's kernels lower the neutral ops: ``(ctx, op, args, kwargs,
# num_outputs) -> values``, with ``args``/``kwargs`` as the nodes hand them to ``ctx.call``.


def lower_on_cpu_flash(ctx, op, args: list, kwargs: dict, num_outputs: int) -> list:
    """``lazygen::attention`` as torch's CPU flash kernel (dropout 0): eager's own kernel,
    so results equal eager on the CPU. The core makes the node only for CPU data."""
    query, key, value, mask = args
    options = {"attn_mask": mask, "scale": kwargs["scale"]}
    call_args = [query, key, value, ctx.constant(0.0), kwargs["is_causal"]]
    return ctx.call(
        "aten::_scaled_dot_product_flash_attention_for_cpu", call_args, options, num_outputs
    )


def lower_backward_on_cpu_flash(ctx, op, args: list, kwargs: dict, num_outputs: int) -> list:
    """``lazygen::attention_backward`` as the CPU flash kernel's backward."""
    *tensors, mask = args
    options = {"attn_mask": mask, "scale": kwargs["scale"]}
    call_args = [*tensors, ctx.constant(0.0), kwargs["is_causal"]]
    return ctx.call(
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
        call_args,
        options,
        num_outputs,
    )


#: The neutral ops as torch's CPU kernels, for backends whose graphs run torch's kernels
#: (torchscript, fx, inductor): op string -> lowering.
TORCH_CPU_LOWERINGS = MappingProxyType(
    {ATTENTION: lower_on_cpu_flash, ATTENTION_BACKWARD: lower_backward_on_cpu_flash}
)
