"""Host (CPU) tensors are accepted where CUDA accepts them (issue #12): length tensors of
ctc_loss, 0-dim host tensors as scalars, host index tensors of indexing ops and the host
indices of tensor_split. Each case runs on lazy inputs and equals eager CPU."""

import pytest
import torch
import torch.nn.functional as F

D = "lazygen"


def _ctc(reduction):
    def run(lp, targets):
        lengths = torch.full((2,), 10, dtype=torch.long)
        target_lengths = torch.tensor([4, 3])  # host tensors, as users pass them on CUDA
        return F.ctc_loss(lp, targets, lengths, target_lengths, reduction=reduction)

    return run


def _ctc_inputs():
    torch.manual_seed(0)
    return torch.randn(10, 2, 5).log_softmax(2), torch.randint(1, 5, (2, 4))


CASES = {
    "ctc_loss_mean": (_ctc("mean"), _ctc_inputs, (0, 1)),
    "ctc_loss_sum": (_ctc("sum"), _ctc_inputs, (0, 1)),
    "ctc_loss_none": (_ctc("none"), _ctc_inputs, (0, 1)),
    "ctc_loss_host_targets": (_ctc("mean"), _ctc_inputs, (0,)),
    "add_0dim_host": (lambda x: x + torch.tensor(2.5), lambda: (torch.randn(3),), (0,)),
    "mul_0dim_host": (lambda x: torch.tensor(3) * x, lambda: (torch.randn(3),), (0,)),
    "where_0dim_host": (
        lambda x: torch.where(x > 0, x, torch.tensor(0.0)),
        lambda: (torch.randn(5),),
        (0,),
    ),
    "index_host_long": (lambda x: x[torch.tensor([2, 0])], lambda: (torch.randn(4, 3),), (0,)),
    "index_host_mask": (
        lambda x: x[torch.tensor([True, False, True, False])],
        lambda: (torch.randn(4, 3),),
        (0,),
    ),
    "index_put_host": (
        lambda x: x.index_put((torch.tensor([1, 3]),), torch.tensor(7.0)),
        lambda: (torch.randn(4),),
        (0,),
    ),
    "tensor_split_host_indices": (
        lambda x: torch.tensor_split(x, torch.tensor([1, 3]))[1],
        lambda: (torch.randn(5),),
        (0,),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_host_argument_accepted_as_on_cuda(name):
    fn, make, lazy_positions = CASES[name]
    args = make()
    expected = fn(*args)
    lazy_args = [a.to(D) if i in lazy_positions else a for i, a in enumerate(args)]
    result = fn(*lazy_args)
    assert result.device.type == D
    torch.testing.assert_close(result.cpu(), expected)


def test_ctc_loss_gradient_with_host_lengths():
    """Was: lazygen's div refused the host target_lengths (ATen's subclass branch)."""
    lp, targets = _ctc_inputs()
    eager = lp.clone().requires_grad_()
    lazy = lp.to(D).requires_grad_()
    _ctc("mean")(eager, targets).backward()
    _ctc("mean")(lazy, targets.to(D)).backward()
    torch.testing.assert_close(lazy.grad.cpu(), eager.grad)
