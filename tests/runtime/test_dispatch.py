"""What happens to ops without a lazy kernel, and dtype/shape corner cases of lazy kernels."""

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime.backends.torchscript.lowering import TSLoweringContext as LoweringContext


def _fallbacks():
    return [n for n in lr.metrics.counter_names() if n.startswith("aten::")]


def _lazy(*tensors):
    return [t.to("lazygen") for t in tensors]


def test_foreach_ops_run_lazily_per_element(fresh_metrics):
    a, b, c, d = (torch.randn(3) for _ in range(4))
    la, lb, lc, ld = _lazy(a, b, c, d)
    results = [
        (
            torch._foreach_add([la, lb], [lc, ld], alpha=2),
            torch._foreach_add([a, b], [c, d], alpha=2),
        ),
        (torch._foreach_mul([la, lb], 3.0), torch._foreach_mul([a, b], 3.0)),
        (torch._foreach_div([la, lb], [2.0, 4.0]), torch._foreach_div([a, b], [2.0, 4.0])),
        (
            torch._foreach_addcdiv([la, lb], [lc, ld], [lc, ld], torch.tensor([0.5, 2.0])),
            torch._foreach_addcdiv([a, b], [c, d], [c, d], torch.tensor([0.5, 2.0])),
        ),
        (torch._foreach_sqrt([la.abs(), lb.abs()]), torch._foreach_sqrt([a.abs(), b.abs()])),
    ]
    assert fresh_metrics.counter_value("UncachedCompile") is None  # nothing synced yet
    for lazy, eager in results:
        for got, want in zip(lazy, eager, strict=True):
            torch.testing.assert_close(got.cpu(), want)
    assert _fallbacks() == []


def test_inplace_foreach_updates_the_tensors(fresh_metrics):
    params = _lazy(torch.ones(2), torch.zeros(3))
    torch._foreach_add_(params, 1.5)
    assert [p.cpu().tolist() for p in params] == [[2.5, 2.5], [1.5, 1.5, 1.5]]
    assert _fallbacks() == []


def test_metadata_only_ops_do_not_sync(fresh_metrics):
    x = torch.ones(2, 3, device="lazygen") * 2
    like = [torch.ones_like(x), torch.zeros_like(x), x.new_zeros(4), torch.full_like(x, 7.0)]
    assert fresh_metrics.counter_value("UncachedCompile") is None
    assert [t.shape for t in like] == [(2, 3), (2, 3), (4,), (2, 3)]
    assert like[3].cpu().tolist() == [[7.0] * 3] * 2


def test_composite_kernels_stay_lazy(fresh_metrics):
    x = torch.randn(4, 5)
    lx = x.to("lazygen")
    got = [
        torch.ops.aten.mul.Scalar(lx, 3),
        torch.ops.aten.add.Scalar(lx, 0.5),
        torch.ops.aten._unsafe_view(lx * 1, (5, 4)),
        torch.softmax(lx, 1),
    ]
    want = [x * 3, x + 0.5, x.view(5, 4), torch.softmax(x, 1)]
    for g, w in zip(lr.to_cpu(got), want, strict=True):
        torch.testing.assert_close(g, w)
    assert _fallbacks() == []


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t * 0.5,
        lambda t: torch.copysign(t, -3.14),
        lambda t: torch.where(t > 1, t, 0.5),
        lambda t: t.float()[0] * 0.1 + t.float(),
        lambda t: t.double() * 0.1,
        lambda t: (t > 1) + 3,
    ],
)
def test_python_numbers_promote_like_wrapped_numbers(fresh_metrics, fn):
    x = torch.arange(4)
    lazy = fn(x.to("lazygen"))
    lr.mark_step()
    eager = fn(x)
    assert lazy.dtype == eager.dtype
    assert lr.inner(lazy)._value.node.data.dtype == eager.dtype
    assert torch.equal(lazy.cpu(), eager)
    assert fresh_metrics.counter_value("OutputDtypeMismatch") is None


def test_batch_norm_running_stats_update_once_and_visibly():
    x = torch.randn(8, 3)
    eager, lazy = torch.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3).to("lazygen")
    out = lazy(x.to("lazygen"))
    eager_out = eager(x)
    torch.testing.assert_close(lazy.running_mean.cpu(), eager.running_mean)  # mid-trace
    assert float(out.detach().sum()) == pytest.approx(
        float(eager_out.detach().sum()), abs=1e-5
    )  # a sync
    lr.mark_step()
    torch.testing.assert_close(lazy.running_mean.cpu(), eager.running_mean)
    torch.testing.assert_close(lazy.running_var.cpu(), eager.running_var)
    assert int(lazy.num_batches_tracked.cpu()) == 1


def test_backward_ops_with_undefined_outputs():
    conv = torch.nn.Conv2d(2, 3, 3)
    x = torch.randn(1, 2, 5, 5)  # no grad wanted for the input: convolution_backward's mask
    conv(x).sum().backward()
    lazy_conv = torch.nn.Conv2d(2, 3, 3)
    lazy_conv.load_state_dict(conv.state_dict())
    lazy_conv.to("lazygen")
    lazy_conv(x.to("lazygen")).sum().backward()
    torch.testing.assert_close(lazy_conv.weight.grad.cpu(), conv.weight.grad)
    torch.testing.assert_close(lazy_conv.bias.grad.cpu(), conv.bias.grad)


@pytest.mark.parametrize(
    "value, type_text, ivalue",
    [
        (None, "NoneType", None),
        ((1, 2), "List[int]", [1, 2]),
        ([], "List[int]", None),
        ([1, 2.5], "List[float]", [1.0, 2.5]),
        (((1, 2), (3,)), "List[List[int]]", [[1, 2], [3]]),
        (torch.float16, "int", 5),
        ((torch.float32, torch.int64), "List[int]", [6, 4]),
        (torch.channels_last, "int", 2),
        (torch.preserve_format, "int", 1),
        (torch.strided, "int", 0),
        (torch.Size([2, 3]), "List[int]", [2, 3]),
        ([1.0, None], "List[Optional[float]]", [1.0, None]),
        ("mean", "str", "mean"),
        (2j, "complex", 2j),
    ],
)
def test_constants_of_every_attribute_kind(value, type_text, ivalue):
    ctx = LoweringContext()
    constant = ctx.constant(value)
    assert str(constant.type()) == type_text
    if constant.node().kind() == "prim::Constant":
        assert constant.toIValue() == ivalue


def test_lazy_device_constant_becomes_the_backing_device():
    ctx = LoweringContext()
    assert ctx.constant(torch.device("lazygen", 0)).toIValue() == torch.device("cpu")


@pytest.mark.parametrize(
    "source",
    [
        lambda: torch.ones(3),  # same dtype and sizes: nothing to convert
        lambda: torch.ones(3, dtype=torch.float64),  # cast
        lambda: torch.ones(1),  # broadcast
    ],
    ids=["same", "cast", "broadcast"],
)
def test_copy_from_a_host_tensor_takes_its_values_at_the_call(source):
    """Regression: ``lazy.copy_(host)`` held the host tensor itself when no conversion was
    needed, so changing the host tensor afterwards (``load_state_dict`` from a model that
    then trains) changed the lazy one."""
    host = source()
    lazy = torch.zeros(3, device="lazygen")
    lazy.copy_(host)
    host.add_(5)
    assert lazy.cpu().tolist() == [1.0, 1.0, 1.0]
