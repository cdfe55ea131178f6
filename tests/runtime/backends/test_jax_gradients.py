"""Gradients on the jax backend that the OpInfo conformance run (``--grad``) found wrong or
failing, against eager and a float64 reference.

* ``linalg.det``, ``logdet``, ``linalg.slogdet``: torch's ``_linalg_det`` and
  ``_linalg_slogdet`` return the LU of ``A^T`` for a contiguous real ``A`` (a lazy tensor
  always is), and their backwards solve with it accordingly; the lowering factored ``A``,
  which gave the transpose of the gradient wherever the rows were pivoted.
* ``gather`` with an empty index of more dimensions than the input (torch allows it): the
  backward's ``scatter_add`` indexed the input with every index dimension and failed.
* ``cdist`` where there are no distances (an empty batch, no rows): torch's
  ``_cdist_backward`` returns zeros of ``x1``'s own shape, the lowering zeros of the
  broadcast shape, so the gradient's data had another shape than the tensor said.
* That class of bug is now refused at compile time, naming the op (a lowering result whose
  sizes are not its node's); ``embedding_bag`` with ``include_last_offset`` was the one
  lowering it caught (a bag size per bag, where torch's meta kernel gives one per offset).

The bounds come from eager's own error against float64, never one machine's bits."""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr

jax = pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")

from lazygen.runtime.backends.jax.backend import JaxBackend  # noqa: E402

from .conftest import BACKENDS, index_zero_on  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _jax_backend():
    BACKENDS.setdefault("jax", JaxBackend())
    yield


def _gradient(fn, x: torch.Tensor, device: str) -> torch.Tensor:
    leaf = x.detach().to(device).requires_grad_()
    (grad,) = torch.autograd.grad(fn(leaf).sum(), leaf)
    return grad.cpu().double()


def _assert_as_close_as_eagers(fn, x: torch.Tensor) -> None:
    """``fn``'s gradient on jax is within a few times eager's float32 error (max norm)."""
    reference = _gradient(fn, x.double(), "cpu")
    eager = _gradient(fn, x, "cpu")
    with index_zero_on("jax"):
        lazy = _gradient(fn, x, "lazygen:0")
    eps = torch.finfo(torch.float32).eps
    bound = 4 * (eager - reference).abs().max() + 16 * eps * reference.abs().max()
    error = (lazy - reference).abs().max()
    assert error <= bound, f"jax gradient off by {error.item()} (bound {bound.item()}):\n{lazy}"


def _pivoted_matrices() -> torch.Tensor:
    """Well conditioned matrices whose LU pivots rows (a diagonally dominant one would not)."""
    a = torch.randn(3, 5, 5, dtype=torch.float64)
    u, _, v = torch.linalg.svd(a)
    matrices = u @ torch.diag_embed(torch.linspace(1, 2, 5, dtype=torch.float64)) @ v
    matrices[..., [0, 4], :] = matrices[..., [4, 0], :]
    matrices[..., 0, 0] = 0.01  # forces a row exchange at the first step
    assert (torch.linalg.lu_factor(matrices.mT)[1] != torch.arange(1, 6)).any()
    return matrices.float()


@pytest.mark.parametrize(
    "fn",
    [
        torch.linalg.det,
        lambda a: torch.linalg.slogdet(a)[1],
        lambda a: torch.logdet(a * a.det().sign()[..., None, None]),
    ],
    ids=["det", "slogdet", "logdet"],
)
def test_determinant_gradients_of_pivoted_matrices_are_eagers(fn):
    matrices = _pivoted_matrices()
    _assert_as_close_as_eagers(fn, matrices)
    _assert_as_close_as_eagers(fn, matrices[0])


def test_gather_gradient_with_an_empty_index_of_more_dimensions_is_zero():
    x = torch.randn(5)
    for index in (torch.empty(2, 0, dtype=torch.long), torch.empty(0, dtype=torch.long)):
        with index_zero_on("jax"):
            grad = _gradient(lambda a, i=index: torch.gather(a, 0, i.to(a.device)), x, "lazygen:0")
        torch.testing.assert_close(grad, torch.zeros(5, dtype=torch.float64), rtol=0, atol=0)


def _cdist_gradients(x1: torch.Tensor, x2: torch.Tensor, device: str) -> list[torch.Tensor]:
    a, b = (t.to(device).requires_grad_() for t in (x1, x2))
    return [g.cpu() for g in torch.autograd.grad(torch.cdist(a, b).sum(), (a, b))]


@pytest.mark.parametrize(
    "sizes",
    [((4, 5), (0, 3, 5)), ((0, 4, 5), (3, 5)), ((4, 5), (2, 0, 5)), ((1, 3, 0), (4, 2, 0))],
)
def test_cdist_gradients_without_distances_have_the_inputs_shapes(sizes):
    x1, x2 = (torch.randn(s) for s in sizes)
    with index_zero_on("jax"):
        grads = _cdist_gradients(x1, x2, "lazygen:0")
    for grad, x in zip(grads, (x1, x2), strict=True):
        torch.testing.assert_close(grad, torch.zeros_like(x), rtol=0, atol=0)


def _compile_error(fn) -> str:
    """``fn()``'s LazyGraphError as text (its traceback, which holds the graph's tensors,
    dropped with it, so that the device can change backends again)."""
    try:
        fn()
    except lr.LazyGraphError as error:
        return str(error)
    return "no error"


def test_a_lowering_that_computes_other_sizes_than_torchs_is_refused_naming_the_op():
    """The lazy tensor holds torch's sizes; data of other sizes must never stand behind it
    (how ``cdist``'s gradient went wrong unnoticed): the compile fails, naming the op."""
    backend = JaxBackend()
    backend.ops["neg"] = lambda shapes, x: x[None]  # a lowering bug: one dimension too many
    BACKENDS["jax_with_a_bug"] = backend
    try:
        with index_zero_on("jax_with_a_bug"):
            message = _compile_error(lambda: torch.neg(torch.randn(7, 3).to("lazygen:0")).cpu())
    finally:
        del BACKENDS["jax_with_a_bug"]
    assert (
        "the jax lowering of aten::neg computed sizes (1, 7, 3) where torch gives (7, 3)" in message
    )


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_with_the_last_offset_included(mode):
    """torch's meta kernel gives ``bag_size`` one entry per offset, the last one's included;
    the lowering gave one per bag, data of other sizes than the node's, which the size
    check above refuses (found when it was first tried)."""
    torch.manual_seed(0)
    indices = torch.tensor([1, 4, 2, 0, 4, 3])
    offsets = torch.tensor([0, 2, 6])

    def bags(weight):
        return torch.nn.functional.embedding_bag(
            indices.to(weight.device), weight, offsets.to(weight.device), mode=mode,
            include_last_offset=True,
        ) * torch.arange(1.0, 6.0, device=weight.device, dtype=weight.dtype)  # fmt: skip

    weight = torch.randn(5, 5)
    with index_zero_on("jax"):
        lazy = bags(weight.to("lazygen:0")).cpu()
    torch.testing.assert_close(lazy, bags(weight))
    _assert_as_close_as_eagers(bags, weight)
