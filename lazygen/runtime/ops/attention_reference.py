"""The reference decomposition of the neutral attention ops (``attention_op``) into plain
ATen ops, forward and backward.

It is the specification of ``lazygen::attention`` and ``lazygen::attention_backward`` in
ops any backend already has (``matmul``, ``logsumexp``, ``_softmax``, ``full``,
``triu``, view copies), so a backend that neither lowers the neutral ops natively nor
refuses them still runs attention inside its graphs: its lowering context opts in with
``LoweringContext.decomposed_ops`` and the nodes lower through ``lower_forward`` /
``lower_backward`` here (``attention.Attention.lower``). The same functions, run on torch
tensors through ``Eager``, are the neutral ops' own implementation where torch's CPU flash
kernel does not apply (other devices, other ranks).

The arithmetic is done in the accumulation dtype (float32 for float16, bfloat16 and
float32 inputs, float64 for float64), as the fused kernels do. The backward recomputes the
softmax from the scores and takes its row sums as ``sum(P * dP)``: in exact arithmetic
that equals ``sum(dO * O)`` from the forward's output and logsumexp, but the forward's
rounded output cancels in the latter, which left gradients several times further from a
float64 run than eager's (the jax backend found it on OpInfo's samples).
"""

from __future__ import annotations

import math

import torch

from ..lowering_context import overload_of
from .recurrent_lowering import Emit


def accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype attention accumulates (and returns its logsumexp) in for ``dtype``."""
    return torch.float64 if dtype == torch.float64 else torch.float32


class _Ops(Emit):
    """The plain ops the decomposition emits (``Emit``: backend values of one lowering),
    each with every argument of its schema (a TorchScript node needs them all)."""

    def cast(self, t, dtype: torch.dtype, current: torch.dtype):
        if dtype == current:
            return t
        return self.keywords(
            "aten::_to_copy",
            [t],
            dtype=dtype,
            layout=None,
            device=None,
            pin_memory=None,
            non_blocking=False,
            memory_format=None,
        )

    def transpose(self, t):
        return self.op("aten::transpose_copy.int", t, self.c(-2), self.c(-1))

    def matmul(self, a, b):
        return self.op("aten::matmul", a, b)

    def scaled(self, t, factor: float):
        return self.op("aten::mul.Scalar", t, self.c(factor))


def _scores(e: _Ops, query, key, mask, is_causal, scale, sizes, dtype):
    """``query @ key^T * scale``, plus the causal and additive masks, in ``dtype``."""
    scores = e.scaled(e.matmul(query, e.transpose(key)), scale)
    if is_causal:
        length_q, length_k = sizes
        blocked = e.keywords(
            "aten::full",
            [e.c([length_q, length_k]), e.c(float("-inf"))],
            dtype=dtype,
            layout=None,
            device=e.ctx.device,
            pin_memory=None,
        )
        scores = e.add(scores, e.op("aten::triu", blocked, e.c(1)))
    if mask is not None:
        scores = e.add(scores, mask)
    return scores


def _scale(scale: float | None, head_size: int) -> float:
    return 1.0 / math.sqrt(head_size) if scale is None else scale


def lower_forward(ctx, query, key, value, mask, is_causal: bool, scale, shapes) -> list:
    """``[output, logsumexp]`` as plain ops on ``ctx``'s values.

    ``shapes`` are ``(query, key, value, mask or None)`` as ``(dtype, sizes)`` pairs.
    """
    e = _Ops(ctx)
    (q_dtype, q_sizes), (k_dtype, k_sizes), (v_dtype, _), mask_shape = shapes
    acc = accumulation_dtype(q_dtype)
    query, key = e.cast(query, acc, q_dtype), e.cast(key, acc, k_dtype)
    value = e.cast(value, acc, v_dtype)
    if mask is not None:
        mask = e.cast(mask, acc, mask_shape[0])
    sizes = (q_sizes[-2], k_sizes[-2])
    scores = _scores(e, query, key, mask, is_causal, _scale(scale, q_sizes[-1]), sizes, acc)
    logsumexp = e.op("aten::logsumexp", scores, e.c([-1]), e.c(False))
    # The weights from a softmax, not exp(scores - logsumexp): the rounding of a large
    # logsumexp enters every exponent, and the output came out twice as far from a
    # float64 run as eager's.
    probs = e.op("aten::_softmax", scores, e.c(-1), e.c(False))
    output = e.matmul(probs, value)
    return [e.cast(output, q_dtype, acc), logsumexp]


def lower_backward(ctx, grad_out, query, key, value, mask, is_causal: bool, scale, shapes):
    """``[grad_query, grad_key, grad_value]`` as plain ops on ``ctx``'s values.

    ``shapes`` are ``(grad_out, query, key, value, mask or None)`` as ``(dtype, sizes)``.
    """
    e = _Ops(ctx)
    (g_dtype, _), (q_dtype, q_sizes), (k_dtype, k_sizes), (v_dtype, _), mask_shape = shapes
    acc = accumulation_dtype(q_dtype)
    grad_out = e.cast(grad_out, acc, g_dtype)
    query, key = e.cast(query, acc, q_dtype), e.cast(key, acc, k_dtype)
    value = e.cast(value, acc, v_dtype)
    if mask is not None:
        mask = e.cast(mask, acc, mask_shape[0])
    scale = _scale(scale, q_sizes[-1])
    sizes = (q_sizes[-2], k_sizes[-2])
    scores = _scores(e, query, key, mask, is_causal, scale, sizes, acc)
    probs = e.op("aten::_softmax", scores, e.c(-1), e.c(False))
    grad_value = e.matmul(e.transpose(probs), grad_out)
    grad_probs = e.matmul(grad_out, e.transpose(value))
    row = e.keywords(
        "aten::sum.dim_IntList", [e.mul(probs, grad_probs), e.c([-1]), e.c(True)], dtype=None
    )
    grad_scores = e.scaled(e.mul(probs, e.sub(grad_probs, row)), scale)
    grad_query = e.matmul(grad_scores, key)
    grad_key = e.matmul(e.transpose(grad_scores), query)
    return [
        e.cast(grad_query, q_dtype, acc),
        e.cast(grad_key, k_dtype, acc),
        e.cast(grad_value, v_dtype, acc),
    ]


class Eager:
    """A stand-in for a lowering context whose values are torch tensors: each ``call``
    runs the op at once. It runs the decomposition eagerly (the neutral ops' torch
    implementation off the CPU flash kernel's scope, and the tests' reference)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def constant(self, value):
        return value

    def call(self, op, args: list, kwargs: dict, num_outputs: int) -> list:
        result = overload_of(op)(*args, **kwargs)
        return [result] if num_outputs == 1 else list(result)


def _shape(t) -> tuple | None:
    return None if t is None else (t.dtype, tuple(t.shape))


def forward(query, key, value, attn_mask=None, is_causal=False, scale=None):
    """The decomposition run eagerly on torch tensors: ``(output, logsumexp)``."""
    shapes = (*(_shape(t) for t in (query, key, value)), _shape(attn_mask))
    ctx = Eager(query.device)
    return tuple(lower_forward(ctx, query, key, value, attn_mask, is_causal, scale, shapes))


def backward(grad_out, query, key, value, attn_mask=None, is_causal=False, scale=None):
    """The backward decomposition run eagerly: ``(grad_query, grad_key, grad_value)``."""
    shapes = (*(_shape(t) for t in (grad_out, query, key, value)), _shape(attn_mask))
    ctx = Eager(query.device)
    return tuple(
        lower_backward(ctx, grad_out, query, key, value, attn_mask, is_causal, scale, shapes)
    )
