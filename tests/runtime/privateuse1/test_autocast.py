"""Autocast on the lazy device follows CUDA's policy (issue #12): every op CUDA autocasts
has a kernel with CUDA's cast rule; results equal the op run with those casts by hand, and
equal CPU autocast for the ops whose policy CPU shares."""

import copy

import pytest
import torch
import torch.nn.functional as F

import lazygen.runtime as lr
from lazygen.runtime.privateuse1 import autocast

D = "lazygen"
BF16 = torch.bfloat16


#: Registered by CUDA builds only, by cuDNN's own file (``ATen/cudnn/AutocastRNN.cpp``): a
#: cuDNN kernel's policy, not the device's (torch 2.14.1's wheel here is a CUDA build).
CUDNN_ONLY = {"aten::_cudnn_rnn"}


def _cuda_autocast_ops() -> set[str]:
    """Ops PyTorch registers an ``AutocastCUDA`` kernel for (present in CPU builds too)."""
    return {
        name
        for name in torch._C._dispatch_get_all_op_names()
        if name.startswith("aten::")
        and torch._C._dispatch_has_kernel_for_dispatch_key(name, "AutocastCUDA")
    } - CUDNN_ONLY


def test_policy_covers_exactly_the_ops_cuda_autocasts():
    ours = {"aten::" + name for name in autocast.kernels()}
    assert ours == _cuda_autocast_ops()
    for name in ours:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "AutocastPrivateUse1"), name


def test_device_advertises_what_it_supports():
    assert torch.get_device_module(D).get_amp_supported_dtype() == [torch.float16, BF16]
    assert torch.amp.is_autocast_available(D)


def _r(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype)


def _pos(*shape, dtype=torch.float32):
    return torch.rand(*shape, dtype=dtype) + 0.5


# (op, inputs built on the host, the policy CUDA applies) -- inputs are float32 for ops that
# autocast lowers and bfloat16 for ops it raises to float32, so that every cast matters.
CASES = {
    "mm": (torch.mm, lambda: (_r(3, 4), _r(4, 5)), "lower"),
    "bmm": (torch.bmm, lambda: (_r(2, 3, 4), _r(2, 4, 5)), "lower"),
    "addmm": (torch.addmm, lambda: (_r(3, 5), _r(3, 4), _r(4, 5)), "lower"),
    "baddbmm": (torch.baddbmm, lambda: (_r(2, 3, 5), _r(2, 3, 4), _r(2, 4, 5)), "lower"),
    "addmv": (torch.addmv, lambda: (_r(3), _r(3, 4), _r(4)), "lower"),
    "mv": (torch.mv, lambda: (_r(3, 4), _r(4)), "lower"),
    "matmul": (torch.matmul, lambda: (_r(2, 3, 4), _r(4, 5)), "lower"),
    "linear": (F.linear, lambda: (_r(3, 4), _r(5, 4), _r(5)), "lower"),
    "conv2d": (F.conv2d, lambda: (_r(1, 2, 5, 5), _r(3, 2, 3, 3), _r(3)), "lower"),
    "conv1d": (F.conv1d, lambda: (_r(1, 2, 7), _r(3, 2, 3)), "lower"),
    "prelu": (F.prelu, lambda: (_r(2, 3, 4), _pos(3)), "lower"),
    "einsum": (lambda a, b: torch.einsum("ij,jk->ik", a, b), lambda: (_r(3, 4), _r(4, 2)), "lower"),
    "exp": (torch.exp, lambda: (_r(5, dtype=BF16),), "fp32"),
    "log": (torch.log, lambda: (_pos(5, dtype=BF16),), "fp32"),
    "rsqrt": (torch.rsqrt, lambda: (_pos(5, dtype=BF16),), "fp32"),
    "pow": (torch.pow, lambda: (_pos(5, dtype=BF16), 2.5), "fp32"),
    "layer_norm": (
        lambda x, w, b: F.layer_norm(x, (4,), w, b),
        lambda: (_r(3, 4, dtype=BF16), _r(4), _r(4, dtype=BF16)),
        "fp32",
    ),
    "mse_loss": (F.mse_loss, lambda: (_r(6, dtype=BF16), _r(6, dtype=BF16)), "fp32"),
    "logsumexp": (lambda x: torch.logsumexp(x, 1), lambda: (_r(3, 4, dtype=BF16),), "fp32"),
    "softplus": (F.softplus, lambda: (_r(5, dtype=BF16),), "fp32"),
    "softmax": (lambda x: torch.softmax(x, 1), lambda: (_r(3, 4, dtype=BF16),), "set_dtype"),
    "log_softmax": (lambda x: F.log_softmax(x, 1), lambda: (_r(3, 4, dtype=BF16),), "set_dtype"),
    "sum": (torch.sum, lambda: (_r(3, 4, dtype=BF16),), "set_dtype"),
    "sum_dim": (lambda x: x.sum(1), lambda: (_r(3, 4, dtype=BF16),), "set_dtype"),
    "cumsum": (lambda x: torch.cumsum(x, 0), lambda: (_r(5, dtype=BF16),), "set_dtype"),
    "prod": (torch.prod, lambda: (_pos(4, dtype=BF16),), "set_dtype"),
    "norm": (torch.norm, lambda: (_r(3, 4, dtype=BF16),), "append_dtype"),
    "norm_dim": (lambda x: torch.norm(x, 2, 1), lambda: (_r(3, 4, dtype=BF16),), "append_dtype"),
    "addcmul": (torch.addcmul, lambda: (_r(4), _r(4, dtype=BF16), _r(4, dtype=BF16)), "promote"),
    "addcmul_low": (
        torch.addcmul,
        lambda: (_r(4, dtype=BF16), _r(4, dtype=BF16), _r(4, dtype=BF16)),
        "promote",
    ),
    "atan2": (torch.atan2, lambda: (_r(4, dtype=BF16), _r(4)), "promote"),
    "dot": (torch.dot, lambda: (_r(4, dtype=BF16), _r(4)), "promote"),
    "cross": (
        lambda a, b: torch.cross(a, b, dim=1),
        lambda: (_r(2, 3), _r(2, 3, dtype=BF16)),
        "promote",
    ),
}


def _expected_dtype(policy, tensors):
    floats = [t.dtype for t in tensors if isinstance(t, torch.Tensor)]
    if policy == "lower":
        return BF16
    if policy == "promote":
        return torch.float32 if torch.float32 in floats else BF16
    return torch.float32


def _manual(fn, args, policy):
    """The op on the host with the casts CUDA's policy prescribes, autocast off."""
    if policy == "lower":
        args = [a.to(BF16) if isinstance(a, torch.Tensor) else a for a in args]
    elif policy == "fp32":
        args = [a.float() if isinstance(a, torch.Tensor) else a for a in args]
    elif policy == "promote":
        dtype = _expected_dtype(policy, args)
        args = [a.to(dtype) if isinstance(a, torch.Tensor) else a for a in args]
    elif policy in ("set_dtype", "append_dtype"):
        # The op computes in float32 and returns float32 (dtype=torch.float32).
        args = [a.float() if isinstance(a, torch.Tensor) else a for a in args]
    return fn(*args)


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_follows_cudas_policy(name):
    fn, make, policy = CASES[name]
    args = make()
    lazy_args = [a.to(D) if isinstance(a, torch.Tensor) else a for a in args]
    with torch.autocast(device_type=D, dtype=BF16):
        result = fn(*lazy_args)
    assert result.device.type == D
    assert result.dtype == _expected_dtype(policy, args), policy
    expected = _manual(fn, args, policy)
    torch.testing.assert_close(result.cpu(), expected.to(result.dtype), rtol=2e-2, atol=2e-2)


# Ops that CPU autocast also lowers to bfloat16: lazy autocast equals CPU autocast there.
SHARED_WITH_CPU = ["mm", "bmm", "addmm", "baddbmm", "matmul", "linear", "conv2d", "conv1d"]


@pytest.mark.parametrize("name", SHARED_WITH_CPU)
def test_op_equals_cpu_autocast_where_policies_agree(name):
    fn, make, _ = CASES[name]
    args = make()
    with torch.autocast(device_type="cpu", dtype=BF16):
        expected = fn(*args)
    with torch.autocast(device_type=D, dtype=BF16):
        result = fn(*[a.to(D) for a in args])
    assert result.dtype == expected.dtype == BF16
    torch.testing.assert_close(result.cpu(), expected, rtol=1e-2, atol=1e-2)


def test_ops_outside_the_policy_fall_through_and_autocast_can_be_nested_off():
    x = torch.randn(4, 4, device=D)
    with torch.autocast(device_type=D, dtype=BF16):
        assert (x + x).dtype == torch.float32  # add: not in CUDA's lists
        assert torch.relu(x @ x).dtype == BF16
        with torch.autocast(device_type=D, enabled=False):
            assert (x @ x).dtype == torch.float32
    assert (x @ x).dtype == torch.float32


def test_float64_and_host_tensors_are_not_cast():
    with torch.autocast(device_type=D, dtype=BF16):
        assert torch.mm(*(torch.randn(2, 2, dtype=torch.float64, device=D),) * 2).dtype == (
            torch.float64
        )
        assert torch.mm(torch.randn(2, 2), torch.randn(2, 2)).dtype == torch.float32


def test_binary_cross_entropy_is_banned_as_on_cuda():
    x = torch.rand(4, device=D)
    with (
        torch.autocast(device_type=D, dtype=BF16),
        pytest.raises(RuntimeError, match="unsafe to autocast"),
    ):
        F.binary_cross_entropy(x, x)


@pytest.mark.parametrize("dtype", [torch.float16, BF16])
def test_mixed_precision_training_step_matches_cpu_autocast(dtype):
    """Linear layers and an fp32 loss under autocast: forward, backward and an SGD step
    equal CPU autocast, whose policy agrees for linear, relu and mse_loss's float32."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    lazy_model = copy.deepcopy(model).to(D)
    x, y = torch.randn(4, 8), torch.randn(4, 2)
    for net, inputs, device in ((model, (x, y), "cpu"), (lazy_model, (x.to(D), y.to(D)), D)):
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        with torch.autocast(device_type=device, dtype=dtype):
            out = net(inputs[0])
            loss = F.mse_loss(out.float(), inputs[1])
        loss.backward()
        optimizer.step()
        lr.mark_step()
    for a, b in zip(model.parameters(), lazy_model.parameters(), strict=True):
        torch.testing.assert_close(b.cpu(), a.detach(), rtol=1e-2, atol=1e-2)
