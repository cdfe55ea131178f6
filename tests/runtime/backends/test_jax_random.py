"""The jax backend's in-place distributions draw from torch's distributions.

A backend on the "seed" random contract draws its own numbers (JAX's generator), so the
OpInfo harness cannot compare them with eager's (``no_sample``). What a user relies on is
the distribution and its parameters: each is checked here against eager's own draws by a
two-sample Kolmogorov-Smirnov statistic (at 20 000 draws each, a false alarm above 0.035
has probability below 1e-9), plus the support (geometric's values are positive integers,
exponential's and log-normal's positive)."""

from __future__ import annotations

import pytest
import torch

jax = pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")

from lazygen.runtime.backends.jax.backend import JaxBackend  # noqa: E402

from .conftest import BACKENDS, index_zero_on  # noqa: E402

N = 20_000

DRAWS = {
    "cauchy": (lambda t: t.cauchy_(1.0, 2.0), None),
    "exponential": (lambda t: t.exponential_(1.5), lambda v: bool((v >= 0).all())),
    "geometric": (
        lambda t: t.geometric_(0.25),
        lambda v: bool((v >= 1).all() and (v == v.round()).all()),
    ),
    "log_normal": (lambda t: t.log_normal_(0.5, 0.75), lambda v: bool((v > 0).all())),
    "uniform": (lambda t: t.uniform_(-2.0, 5.0), lambda v: bool(((v >= -2) & (v < 5)).all())),
    "normal": (lambda t: t.normal_(1.0, 3.0), None),
}


@pytest.fixture(scope="module", autouse=True)
def _jax_backend():
    BACKENDS.setdefault("jax", JaxBackend())
    yield


def _ks_statistic(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest gap between the two samples' empirical distribution functions."""
    both = torch.cat([a, b]).double().sort().values
    fa = torch.searchsorted(a.double().sort().values, both, right=True) / a.numel()
    fb = torch.searchsorted(b.double().sort().values, both, right=True) / b.numel()
    return (fa - fb).abs().max().item()


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_distribution_matches_eagers(name):
    draw, in_support = DRAWS[name]
    torch.manual_seed(0)
    eager = draw(torch.zeros(N))
    with index_zero_on("jax"):
        lazy = draw(torch.zeros(N, device="lazygen:0")).cpu()
    assert lazy.dtype == eager.dtype and lazy.shape == eager.shape
    assert in_support is None or in_support(lazy), f"{name}: a draw outside the support"
    statistic = _ks_statistic(lazy, eager)
    assert statistic < 0.035, f"{name}: KS statistic {statistic:.4f} against eager's draws"
