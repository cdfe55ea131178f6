"""``native_group_norm`` and its backward run lazily (both in the op list's full codegen;
torch's own autograd formula differentiates the forward, ``mean`` and ``rstd`` included)
and their results equal eager's."""

from __future__ import annotations

import itertools

import pytest
import torch

import lazygen.runtime as lr

LAZY = "lazygen"

SHAPES = [((2, 6, 3, 4), 3), ((2, 6), 2), ((4, 4, 5), 4), ((1, 6, 2, 2, 2), 1), ((3, 6, 1), 6)]
NEEDS = [(True, True, True), (True, False, False), (False, True, True), (True, True, False)]


def _grads(device, shape, groups, needs, dtype, affine):
    torch.manual_seed(1)
    x = torch.randn(*shape, dtype=dtype)
    weight, bias = torch.randn(shape[1], dtype=dtype), torch.randn(shape[1], dtype=dtype)
    grad = torch.randn(*shape, dtype=dtype)
    x = x.to(device).requires_grad_(needs[0])
    weight = weight.to(device).requires_grad_(needs[1]) if affine else None
    bias = bias.to(device).requires_grad_(needs[2]) if affine else None
    y = torch.nn.functional.group_norm(x, groups, weight, bias, 1e-5)
    (y * grad.to(device)).sum().backward()
    lr.mark_step()
    return [None if t is None or t.grad is None else t.grad.cpu() for t in (x, weight, bias)]


@pytest.mark.parametrize(
    "shape,groups,needs,dtype,affine",
    [
        (s, g, n, d, a)
        for (s, g), n, d, a in itertools.product(
            SHAPES, NEEDS, (torch.float32, torch.float64), (True, False)
        )
        if a or n[0]
    ],
)
def test_group_norm_gradients_equal_eager(shape, groups, needs, dtype, affine, fresh_metrics):
    want = _grads("cpu", shape, groups, needs, dtype, affine)
    got = _grads(LAZY, shape, groups, needs, dtype, affine)
    for index, (w, g) in enumerate(zip(want, got, strict=True)):
        assert (w is None) == (g is None), f"gradient {index}"
        if w is not None:
            torch.testing.assert_close(g, w, msg=f"gradient {index}")
    assert fresh_metrics.counter_value("lazy::native_group_norm_backward") == 1
    assert fresh_metrics.counter_value("lazy::native_group_norm") == 1
    assert not [n for n in fresh_metrics.counter_names() if n.startswith("aten::")]


def test_group_norm_training_matches_eager(fresh_metrics):
    """A step stays one graph: the forward used to run through the eager fallback, cutting
    every step (wav2vec2/HuBERT's feature encoder, diffusion UNets)."""

    def train(device):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3),
            torch.nn.GroupNorm(4, 8),
            torch.nn.ReLU(),
            torch.nn.Conv2d(8, 4, 1),
            torch.nn.GroupNorm(2, 4),
        ).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        torch.manual_seed(1)
        for x in [torch.randn(2, 3, 7, 7) for _ in range(3)]:
            opt.zero_grad()
            model(x.to(device)).pow(2).mean().backward()
            opt.step()
            lr.mark_step()
        return [p.detach().cpu() for p in model.parameters()]

    for got, want in zip(train(LAZY), train("cpu"), strict=True):
        torch.testing.assert_close(got, want)
    assert not [n for n in fresh_metrics.counter_names() if n.startswith("aten::")]


def test_group_norm_statistics_are_differentiable_as_in_eager():
    """``native_group_norm``'s ``mean`` and ``rstd`` carry gradients to the input, as in
    eager (found by the gradient conformance suite: lazily they were non-differentiable)."""

    def grads(device):
        torch.manual_seed(3)
        x = torch.randn(2, 6, 5).to(device).requires_grad_()
        weight = torch.randn(6).to(device).requires_grad_()
        out, mean, rstd = torch.ops.aten.native_group_norm(x, weight, None, 2, 6, 5, 3, 1e-5)
        assert mean.requires_grad and rstd.requires_grad
        loss = out.sin().sum() + (mean * 2).sum() + rstd.pow(2).sum()
        return [g.cpu() for g in torch.autograd.grad(loss, (x, weight))]

    for got, want in zip(grads(LAZY), grads("cpu"), strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
