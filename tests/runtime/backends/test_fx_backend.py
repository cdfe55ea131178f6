"""The ``fx`` backend: lazy graphs as ``torch.fx`` GraphModules of aten overloads, run
uncompiled. Cheap, so it runs the whole training matrix and the random-op semantics."""

from __future__ import annotations

import pytest
import torch
from lazygen.runtime.builtin.generated import non_native_ir
from support.training import OPTIMIZERS, WORKLOADS, compare_training

import lazygen.runtime as lr
from lazygen.runtime import kernel_support as rt
from lazygen.runtime.backends.fx.backend import FxBackend
from lazygen.runtime.execution import executor
from lazygen.runtime.ir import Node
from runtime.builtin.test_non_native_lowerings import BASE
from runtime.builtin.test_non_native_lowerings import CASES as NON_NATIVE_CASES
from runtime.test_random import RANDOM_OPS

from .conftest import FX, index_zero_on


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_training_matches_eager_and_caches_compiles(workload, optimizer, fresh_metrics):
    with index_zero_on("fx"):
        assert lr.backend(0).name == "fx"
        uncached = compare_training(optimizer, steps=5, workload=workload)
    assert uncached[2] == uncached[3] == uncached[4], uncached


def test_graphs_are_fx_modules_of_aten_overloads():
    x = torch.randn(3, 4, device=FX)
    y = torch.relu(x * 2.5 + 1).sum(dim=1)
    code = lr.debug.dump_ir([y], "backend")
    assert "torch.ops.aten.relu.default" in code and "torch.ops.aten.sum.dim_IntList" in code
    torch.testing.assert_close(y.cpu(), torch.relu(x.cpu() * 2.5 + 1).sum(dim=1))


def test_wrapped_numbers_promote_as_eager():
    ints = torch.arange(6).reshape(2, 3)
    for make in (lambda t: t * 0.5, lambda t: t + 2, lambda t: torch.add(t, 3, alpha=2)):
        lazy = make(ints.to(FX))
        want = make(ints)
        lr.mark_step()
        assert lazy.dtype == want.dtype
        assert torch.equal(lazy.cpu(), want)


@pytest.mark.parametrize("name", sorted(RANDOM_OPS))
def test_random_ops_draw_eagers_numbers(name):
    torch.manual_seed(3)
    eager = RANDOM_OPS[name]("cpu")
    torch.manual_seed(3)
    lazy = RANDOM_OPS[name](FX)
    lr.mark_step()
    for got, want in zip(lazy, eager, strict=True):
        assert torch.equal(got.cpu(), want)


class Frobnicate(Node):
    """A non-native op torch has no overload for."""

    __slots__ = ()
    op_kind = "ltc_frobnicate"
    op_name = "frobnicate"

    def lower(self, ctx):
        (x,) = self.operands
        return ctx.call("ltc_frobnicate", [ctx.tensor(x)], {}, 1)


def _frobnicated(x):
    device = rt.device_of(lr.inner(x))
    value = rt.tensor(lr.inner(x), device)
    node = rt.make_node(Frobnicate, (value,), (), (rt.Shape(x.dtype, tuple(x.shape)),))
    return rt.wrap(node, device)


def test_a_non_native_op_without_a_lowering_is_a_clear_error():
    x = torch.ones(3, device=FX)
    inner = _frobnicated(x)
    with pytest.raises(lr.LazyGraphError, match=r"lowering of frobnicate.*ltc_frobnicate"):
        executor.sync([inner])


def test_op_lowerings_hook_lowers_non_native_ops():
    def frobnicate(ctx, op, args, kwargs, num_outputs):
        (x,) = args
        return [ctx.graph.call_function(torch.ops.aten.mul.Tensor, (x, x))]

    backend = FxBackend(op_lowerings={"ltc_frobnicate": frobnicate})
    lr.set_device_backend(3, backend)
    x = torch.full((3,), 3.0, device="lazygen:3")
    inner = _frobnicated(x)
    lr.mark_step()
    assert inner._value.node.data.tolist() == [9.0, 9.0, 9.0]


def _run_node(cls, tensors, attrs, sizes, device):
    lazy = [lr.inner(t.to(device)) for t in tensors]
    dev = rt.device_of(*lazy)
    operands = tuple(rt.tensor(t, dev) for t in lazy)
    result = rt.wrap(rt.make_node(cls, operands, attrs, (rt.Shape(torch.float32, sizes),)), dev)
    executor.sync([result])
    return result._value.node.data.cpu()


EXTRA_NON_NATIVE = {  # ops named without their overload, keyword-only arguments positional
    "expand": (non_native_ir.Expand, [BASE[:1]], ((3, 6), False), (3, 6), BASE[:1].expand(3, 6)),
    "squeeze": (non_native_ir.Squeeze, [BASE[:1]], (0,), (6,), BASE[0]),
    "unsqueeze": (non_native_ir.Unsqueeze, [BASE], (1,), (4, 1, 6), BASE.unsqueeze(1)),
    "permute": (non_native_ir.Permute, [BASE], ((1, 0),), (6, 4), BASE.t()),
    "view": (non_native_ir.View, [BASE], ((6, 4),), (6, 4), BASE.view(6, 4)),
}


@pytest.mark.parametrize("name", sorted(NON_NATIVE_CASES) + sorted(EXTRA_NON_NATIVE))
def test_hand_written_and_non_native_lowerings_build_fx_graphs(name):
    cls, tensors, attrs, sizes, expected = {**NON_NATIVE_CASES, **EXTRA_NON_NATIVE}[name]
    assert torch.equal(_run_node(cls, tensors, attrs, sizes, FX), expected)
