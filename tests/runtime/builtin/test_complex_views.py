"""``view_as_complex_copy`` and ``view_as_real_copy`` are lazy: rotary position embeddings
computed as complex products (diffusers' Lumina2 and QwenImage transformers, Meta's Llama
code) train in one graph, with eager's numbers. They ran through the eager fallback, two
graph cuts per attention layer, since a lazy stft backward through them crashed the process
(it no longer does: ``tests/conformance`` runs stft's gradients lazily)."""

from __future__ import annotations

import torch
from support.training import assert_as_accurate_as_eager

import lazygen.runtime as lr


def _rotary(x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    """x: (batch, tokens, heads, dim); freqs: (tokens, dim / 2) complex."""
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * freqs[:, None]).flatten(-2)


def _attention_scores(q, k, freqs):
    q, k = _rotary(q, freqs), _rotary(k, freqs)
    return torch.einsum("bthd,bshd->bhts", q, k).softmax(-1)


def _run(device, dtype=torch.float32):
    generator = torch.Generator().manual_seed(0)
    q, k = (torch.randn(2, 5, 2, 8, generator=generator, dtype=dtype) for _ in range(2))
    angles = torch.outer(torch.arange(5.0, dtype=dtype), torch.rand(4, generator=generator))
    freqs = torch.polar(torch.ones_like(angles), angles)
    q, k = (t.to(device).requires_grad_() for t in (q, k))
    scores = _attention_scores(q, k, freqs.to(device))
    (scores * torch.arange(5.0, device=device, dtype=dtype)).sum().backward()
    return [t.detach().cpu() for t in (scores, q.grad, k.grad)]


def test_complex_rotary_embeddings_train_lazily_as_eager():
    lr.metrics.reset()
    lazy = _run("lazygen")
    fallbacks = [n for n in lr.metrics.counter_names() if n.startswith("aten::")]
    assert not fallbacks, fallbacks
    assert_as_accurate_as_eager(lazy, _run("cpu"), lambda: _run("cpu", torch.float64))
