"""``cholesky_solve``, ``ormqr`` and ``segment_reduce``'s gradient on the jax backend
(issue 49): they ran eagerly (``_cholesky_solve_helper``, ``ormqr`` and
``_segment_reduce_backward`` were not in the op table). Each is compared with eager in
float64, where both run LAPACK's routines or exact sums: the tolerance is float64's."""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr

from .conftest import BACKENDS, index_zero_on

backend = pytest.importorskip(
    "lazygen.runtime.backends.jax.backend",
    reason="the jax backend needs JAX: pip install lazygen[jax]",
)


@pytest.fixture(scope="module", autouse=True)
def _jax_backend():
    BACKENDS.setdefault("jax", backend.JaxBackend())


def _on_jax(fn, *inputs):
    """``fn``'s result and its inputs' gradients on the jax backend, and what it refused."""
    with index_zero_on("jax"):
        lr.metrics.reset()
        result = _run(fn, inputs, "lazygen:0")
        refused = [r.op for r in lr.metrics.fallback_report().refused]
    return result, refused


def _run(fn, inputs, device):
    """``fn``'s result and gradients on ``device``, as CPU tensors (none left on it)."""
    moved = [x.detach().to(device).requires_grad_(x.requires_grad) for x in inputs]
    out = fn(*moved)
    out.sum().backward()
    return out.detach().cpu(), [x.grad.cpu() if x.grad is not None else None for x in moved]


def _check(fn, *inputs):
    (got, got_grads), refused = _on_jax(fn, *inputs)
    want, want_grads = _run(fn, inputs, "cpu")
    assert not refused, refused
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)
    for g, w in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_its_gradient(upper):
    torch.manual_seed(0)
    a = torch.randn(2, 4, 4, dtype=torch.float64)
    factor = torch.linalg.cholesky(a @ a.mT + 4 * torch.eye(4, dtype=torch.float64), upper=upper)
    b = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)
    factor.requires_grad_()
    _check(lambda b, f: torch.cholesky_solve(b, f, upper=upper), b, factor)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr(left, transpose):
    torch.manual_seed(0)
    reflectors, tau = torch.geqrf(torch.randn(5, 3, dtype=torch.float64))
    c = torch.randn(5, 2, dtype=torch.float64) if left else torch.randn(2, 5, dtype=torch.float64)
    c.requires_grad_()
    _check(lambda r, t, c: torch.ormqr(r, t, c, left=left, transpose=transpose), reflectors, tau, c)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_segment_reduce_gradient(reduce):
    """Segments of 2, 0, 3 and 1 elements along dim 1, with ties (a maximum's gradient is
    split among them) and zeros (a product's gradient is the others' product)."""
    data = torch.tensor(
        [[1.5, 1.5, 2.0, 0.0, 3.0, -1.0], [0.0, 0.0, 4.0, 2.0, 2.0, 5.0]], dtype=torch.float64
    ).requires_grad_()
    lengths = torch.tensor([[2, 0, 3, 1], [2, 0, 3, 1]])

    def fn(x):
        out = torch.segment_reduce(x, reduce, lengths=lengths.to(x.device), axis=1, initial=0.5)
        return out * torch.arange(1, 5, dtype=out.dtype, device=out.device)

    _check(fn, data)
