"""Backward ops torch has no formula for, derived from their forward's formula (issue 49).

``upsample_*_backward``, ``replication_pad*d_backward`` and ``grid_sampler_2d_backward``
ran eagerly on the jax backend (a graph cut each, 11 OpInfo gradient entries refused):
torch's decompositions hold their forwards' formulas, not theirs. The jax backend now
derives them (``backends/jax/derived_backwards.py``). The derivation is checked here
against torch's own kernels in float64 on the CPU (no JAX needed), then on the lazy device,
where the lowering asks from inside the device's dispatch (below autograd)."""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime.backends.jax.decomposed import formulas
from lazygen.runtime.backends.jax.derived_backwards import DerivedBackwards

from .conftest import BACKENDS, index_zero_on

aten = torch.ops.aten
F = torch.nn.functional


@pytest.fixture(scope="module")
def derived() -> DerivedBackwards:
    return DerivedBackwards(formulas())


def _f64(*shape):
    return torch.randn(*shape, dtype=torch.float64)


CASES = {
    "upsample_nearest2d": (
        aten.upsample_nearest2d_backward.default,
        lambda: (_f64(2, 3, 6, 10), [6, 10], [2, 3, 4, 5]),  # trailing scales left out
    ),
    "upsample_bilinear2d, corners aligned": (
        aten.upsample_bilinear2d_backward.default,
        lambda: (_f64(2, 3, 7, 9), [7, 9], [2, 3, 4, 5], True, None, None),
    ),
    "upsample_bicubic2d, with scales": (
        aten.upsample_bicubic2d_backward.default,
        lambda: (_f64(1, 2, 8, 10), [8, 10], [1, 2, 4, 5], False, 2.0, 2.0),
    ),
    "upsample_trilinear3d": (
        aten.upsample_trilinear3d_backward.default,
        lambda: (_f64(1, 2, 4, 6, 6), [4, 6, 6], [1, 2, 2, 3, 4], False),
    ),
    "_upsample_nearest_exact1d": (
        aten._upsample_nearest_exact1d_backward.default,
        lambda: (_f64(2, 3, 7), [7], [2, 3, 5]),
    ),
    "replication_pad2d, a negative pad": (
        aten.replication_pad2d_backward.default,
        lambda: (_f64(2, 3, 2, 8), _f64(2, 3, 3, 5), [2, 1, -1, 0]),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_derived_backward_equals_torchs_kernel(case, derived):
    op, make = CASES[case]
    torch.manual_seed(0)
    args = make()
    assert op in derived
    torch.testing.assert_close(derived[op](*args), op(*args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", [0, 1, 2])  # bilinear, nearest, bicubic
def test_grid_samplers_both_gradients_equal_torchs_kernel(mode, derived):
    op = aten.grid_sampler_2d_backward.default
    torch.manual_seed(0)
    grad, x, grid = _f64(2, 3, 5, 4), _f64(2, 3, 6, 7), torch.rand(2, 5, 4, 2).double() * 2.2 - 1.1
    args = (grad, x, grid, mode, 1, False, [True, True])
    got, want = derived[op](*args), op(*args)
    torch.testing.assert_close(got[0], want[0], rtol=1e-12, atol=1e-12)
    if mode != 1:  # nearest's grid gradient is zero in torch's kernel; its formula's too
        torch.testing.assert_close(got[1], want[1], rtol=1e-10, atol=1e-10)


def test_schemas_that_do_not_fit_are_not_derived(derived):
    """A backward whose first argument is not the gradient (``linear_backward``), or whose
    arguments do not name the forward's (``_weight_norm_interface_backward``'s ``saved_v``),
    is left refused rather than guessed."""
    assert aten.linear_backward.default not in derived
    assert aten._weight_norm_interface_backward.default not in derived
    assert aten.relu.default not in derived  # not a backward op
    assert aten.upsample_nearest2d_backward.grad_input not in derived  # an out= form


def test_interpolate_and_pad_gradients_run_in_the_graph_on_jax():
    backend = pytest.importorskip(
        "lazygen.runtime.backends.jax.backend",
        reason="the jax backend needs JAX: pip install lazygen[jax]",
    )
    BACKENDS.setdefault("jax", backend.JaxBackend())

    def loss(x):
        up = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        near = F.interpolate(x, size=(5, 7), mode="nearest")
        return up.sin().sum() + (near * near).sum() + F.pad(x, (1, 2, 0, 1), "replicate").sum()

    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 5, dtype=torch.float64)
    eager = x.clone().requires_grad_()
    loss(eager).backward()
    with index_zero_on("jax"):
        lr.metrics.reset()
        lazy = x.to("lazygen").requires_grad_()
        loss(lazy).backward()
        got = lazy.grad.cpu()
        refused = lr.metrics.fallback_report().refused
        del lazy  # the device's backend goes back at the block's end: no tensor may hold it
    assert not refused, [r.op for r in refused]
    torch.testing.assert_close(got, eager.grad, rtol=1e-10, atol=1e-10)


def test_a_backward_whose_forward_formula_draws_random_numbers_is_refused():
    """Derived from a forward that draws (dropout inside it), the backward would draw its
    mask anew, not the forward's: such a derivation is refused, never lowered."""
    pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")
    from lazygen.runtime.backends.jax.decomposed import Decompositions
    from lazygen.runtime.backends.jax.ops import JAX_OPS
    from lazygen.runtime.backends.jax.refusals import call_refused

    forward, backward = aten.upsample_nearest2d.default, aten.upsample_nearest2d_backward.default
    every = formulas()

    def drawing(x, output_size, scales_h=None, scales_w=None):
        out = every[forward](x, output_size, scales_h, scales_w)
        return torch.ops.aten.native_dropout.default(out, 0.5, True)[0]

    args = [torch.randn(2, 3, 6, 10), [6, 10], [2, 3, 4, 5]]
    plain = Decompositions(JAX_OPS, call_refused)
    assert not plain.refuses(backward, args, {})
    drawn = Decompositions(JAX_OPS, call_refused)
    drawn.derived = DerivedBackwards({**every, forward: drawing})
    assert drawn.refuses(backward, args, {})
