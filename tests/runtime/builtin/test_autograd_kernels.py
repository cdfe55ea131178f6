import pytest
import torch

import lazygen.runtime as lr


def _grads(fn, x, *params):
    x = x.detach().requires_grad_(True)
    params = [p.detach().requires_grad_(True) for p in params]
    out = fn(x, *params)
    out.sum().backward()
    return [out.detach().cpu(), x.grad.cpu()] + [p.grad.cpu() for p in params]


def test_max_pool3d_autograd_kernel(fresh_metrics):
    x = torch.randn(1, 2, 4, 4, 4)

    def pool(t):
        return torch.nn.functional.max_pool3d(t, 2)

    eager = _grads(pool, x)
    lazy = _grads(pool, x.to("lazygen"))
    for got, want in zip(lazy, eager, strict=True):
        torch.testing.assert_close(got, want)
    assert fresh_metrics.counter_value("aten::max_pool3d_with_indices_backward") == 1


def test_group_norm_autograd_kernel():
    x, weight, bias = torch.randn(2, 4, 3), torch.randn(4), torch.randn(4)

    def norm(t, w, b):
        return torch.nn.functional.group_norm(t, 2, w, b) * torch.arange(3.0, device=t.device)

    eager = _grads(norm, x, weight, bias)
    lazy = _grads(norm, x.to("lazygen"), weight.to("lazygen"), bias.to("lazygen"))
    for got, want in zip(lazy, eager, strict=True):
        torch.testing.assert_close(got, want)


@pytest.mark.gpu
def test_cuda_backing_device_is_configurable():  # pragma: no cover - no CUDA here
    lr.config.set_backing_device("cuda")
    lr.config.set_backing_device("cpu")


def test_cuda_backing_refused_without_cuda():
    if torch.cuda.is_available():  # pragma: no cover
        pytest.skip("CUDA present")
    with pytest.raises(RuntimeError, match="CUDA"):
        lr.config.set_backing_device("cuda")
