"""Cases the OpInfo conformance run found, reduced to the runtime behaviour behind each."""

import pytest
import torch

import lazygen.runtime as lr

pytestmark = pytest.mark.filterwarnings("ignore:Sparse")


def _same(fn, *inputs, exact=False):
    eager = fn(*inputs)
    lazy = fn(*[t.to("lazygen") for t in inputs])
    if exact:
        assert torch.equal(lazy.cpu(), eager)
    else:
        torch.testing.assert_close(lazy.cpu(), eager)


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(3, 3).to_sparse().to("lazygen"),
        lambda: torch.randn(3, 3).to_sparse_csr().to("lazygen"),
        lambda: torch.randn(3, 3, device="lazygen").to_sparse(),
        lambda: torch.randn(3, 3, device="lazygen").to_sparse_csr(),
        lambda: torch.empty(2, 2, layout=torch.sparse_coo, device="lazygen"),
        lambda: torch.sparse_coo_tensor(
            torch.tensor([[0], [1]]), torch.tensor([1.0]), (2, 2), device="lazygen"
        ),
    ],
)
def test_sparse_tensors_are_kept_off_the_device_with_a_clear_error(make):
    with pytest.raises(RuntimeError, match="strided \\(dense\\) tensors only"):
        make()


def test_sparse_cpu_tensors_still_convert_on_the_cpu():
    coo = torch.randn(3, 3).to_sparse().to(torch.float64)
    csr = torch.randn(3, 3).to_sparse_csr().to(torch.float64)
    assert (coo.layout, coo.dtype) == (torch.sparse_coo, torch.float64)
    assert (csr.layout, csr.dtype) == (torch.sparse_csr, torch.float64)


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: torch.fft.hfft2(t, norm="ortho"),
        lambda t: torch.fft.hfftn(t, dim=(0, -1)),
        lambda t: torch.conj(t.to(torch.complex64)) * 2,
        lambda t: torch._neg_view(t) + 0,
    ],
)
def test_conjugate_and_negative_views_are_applied(fn):
    _same(fn, torch.randn(5, 6, 7))


def test_reductions_over_zero_dim_tensors_with_no_dims():
    _same(
        lambda t: torch.masked.mean(t, mask=torch.tensor(True, device=t.device)), torch.tensor(2.5)
    )
    _same(lambda t: t.sum(dim=None), torch.tensor(True), exact=True)


@pytest.mark.parametrize(
    "fn",
    [
        lambda d: torch.eye(3, device=d) * 1,
        lambda d: torch.eye(2, 3, device=d).expand(2, 2, 3) * 1,
        lambda d: torch.kaiser_window(5, device=d) * 1,
        lambda d: torch.linalg.matrix_power(torch.full((2, 2), 3.0, device=d), 0),
    ],
)
def test_factories_that_resize_their_output(fn):
    assert torch.equal(fn("lazygen").cpu(), fn("cpu"))


def test_composite_kernels_functionalization_refuses_run_eagerly():
    a, b = torch.randn(4), torch.randn(4)
    assert torch.allclose(a.to("lazygen"), a.to("lazygen") + 1e-9)
    assert torch.allclose(a, b) == torch.allclose(a.to("lazygen"), b.to("lazygen"))
    lr.mark_step()
