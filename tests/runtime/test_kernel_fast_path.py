"""Generated kernels' fast path (``rt.trace``): taken when every ``Tensor`` argument is a lazy
tensor, with the same node, shapes and counters as the general path it replaces."""

from __future__ import annotations

import pytest
import torch
from lazygen.runtime.builtin.generated import kernels as generated_kernels

import lazygen.runtime as lr
from lazygen.runtime import debug, kernel_support

LAZY = "lazygen"


@pytest.fixture
def trace_calls(monkeypatch):
    """The names of the ``TracedOp`` of every fast-path call while the test runs."""
    calls: list[str] = []
    original = kernel_support.trace

    def spy(traced, *args):
        calls.append(traced.counter)
        return original(traced, *args)

    monkeypatch.setattr(kernel_support, "trace", spy)
    return calls


def test_lazy_tensor_arguments_take_the_fast_path_and_count(trace_calls, fresh_metrics):
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    result = a.to(LAZY) + b.to(LAZY)
    assert "lazy::add.Tensor" in trace_calls
    assert fresh_metrics.counter_value("lazy::add.Tensor") == 1
    torch.testing.assert_close(result.cpu(), a + b)


def test_a_host_scalar_tensor_takes_the_general_path(trace_calls, fresh_metrics):
    """A 0-dim CPU tensor is uploaded by ``rt.tensor``: the fast path must not read its
    ``_value``; the general path traces it, counted once all the same."""
    a = torch.randn(3, 4)
    scale = torch.tensor(2.5)
    result = torch.mul(a.to(LAZY), scale)
    assert "lazy::mul.Tensor" not in trace_calls
    assert fresh_metrics.counter_value("lazy::mul.Tensor") == 1
    torch.testing.assert_close(result.cpu(), a * scale)


def _ir_of_sub_and_pool(a: torch.Tensor, b: torch.Tensor) -> str:
    la, lb = a.to(LAZY), b.to(LAZY)
    lr.mark_step()
    out = torch.nn.functional.adaptive_avg_pool2d(torch.sub(la, lb, alpha=3), 2)
    return debug.dump_ir([out], "backend")


def test_both_paths_build_the_same_graph(monkeypatch):
    a, b = torch.randn(1, 4, 4), torch.randn(1, 4, 4)
    fast = _ir_of_sub_and_pool(a, b)
    # The guard compares with the kernels module's ``LazyTensor``: another class there
    # sends every call down the general path.
    monkeypatch.setattr(generated_kernels, "LazyTensor", type("NotLazy", (), {}))
    monkeypatch.setattr(kernel_support, "trace", None)  # the fast path would fail
    general = _ir_of_sub_and_pool(a, b)
    assert fast == general
    assert "aten::sub" in fast and "aten::_adaptive_avg_pool2d" in fast


def test_data_dependent_shapes_are_not_cached():
    """``nonzero``'s shapes come from its values: two calls with equal metadata but other
    values must get their own shapes (``TracedOp.cache_shapes`` is off)."""
    few = torch.tensor([0.0, 1.0, 0.0, 0.0]).to(LAZY)
    many = torch.tensor([1.0, 1.0, 1.0, 0.0]).to(LAZY)
    lr.mark_step()
    assert torch.nonzero(few).shape == (1, 1)
    assert torch.nonzero(many).shape == (3, 1)


def test_shape_key_of_floats_is_their_type_so_values_share_an_entry():
    assert kernel_support.shape_key(0.5) is float and kernel_support.shape_key(2.0) is float
    assert kernel_support.shape_key(0.5, True) == 0.5
    assert kernel_support.shape_key([1, 2]) == (1, 2)


def test_shape_key_of_a_list_of_ints_is_the_tuple_and_of_others_per_element():
    """A list of plain ints is keyed as a tuple in one step (``_INTS``); any other element
    keeps its own key: a bool must not share an entry with the int of the same value."""
    key = kernel_support.shape_key
    assert key([3, 6, 16]) == (3, 6, 16) and key(()) == () and key([]) == ()
    assert key([True, 1]) == ((bool, True), 1) != key([1, 1])
    assert key([1, 0.5]) == (1, float) and key([[1, 2], 3]) == ((1, 2), 3)


def test_a_kernel_replaced_after_its_op_ran_is_the_one_dispatched(fresh_metrics):
    """``__torch_dispatch__`` keeps the table by ``id(func)`` as ops run; every change of
    the table (``register_kernels``, ``unregister_kernels``, ``set_force_fallback``) must
    reach the next call of an op that already ran."""
    from lazygen.runtime import dispatch

    a, b = torch.randn(2, 3), torch.randn(2, 3)
    la, lb = a.to(LAZY), b.to(LAZY)
    la + lb  # the generated kernel, now in the id-keyed copy
    calls = []

    def replacement(self, other, *args, **kwargs):
        calls.append("replacement")
        return dispatch.call(torch.ops.aten.sub.Tensor, self, other)

    dispatch.register_kernels({torch.ops.aten.add.Tensor: replacement})
    try:
        torch.testing.assert_close((la + lb).cpu(), a - b)
        assert calls == ["replacement"]
    finally:
        dispatch.unregister_kernels([torch.ops.aten.add.Tensor])
        dispatch.register_kernels({torch.ops.aten.add.Tensor: generated_kernels.add_tensor})
    torch.testing.assert_close((la + lb).cpu(), a + b)
    assert calls == ["replacement"]
    lr.config.set_force_fallback(["add.Tensor"])
    torch.testing.assert_close((la + lb).cpu(), a + b)
    assert any(name.startswith("aten::add") for name in fresh_metrics.counter_names())


def test_wrapper_tensors_are_made_by_position_and_by_keyword_alike(monkeypatch):
    """``new_lazy`` passes ``_make_wrapper_subclass`` its arguments by position (cheaper);
    where a torch would take them by keyword only, the keyword call is used instead."""
    from lazygen.runtime.tracing import tensor

    assert tensor._make_wrapper_subclass is torch.Tensor._make_wrapper_subclass
    real = torch.Tensor._make_wrapper_subclass

    def keywords_only(cls, size, *, dtype=None, device=None):
        return real(cls, size, dtype=dtype, device=device)

    monkeypatch.setattr(torch.Tensor, "_make_wrapper_subclass", keywords_only)
    make = tensor._wrapper_maker()
    assert make is not keywords_only
    device = torch.device(LAZY, 0)
    made = make(tensor.LazyTensor, (4, 5), None, None, None, torch.float64, torch.strided, device)
    assert (made.shape, made.stride(), made.dtype, made.device) == (
        (4, 5),
        (5, 1),
        torch.float64,
        device,
    )
    lazy = torch.ones(4, 5, dtype=torch.float64).to(LAZY) * 2
    assert (lazy.shape, lazy.stride(), lazy.dtype, lazy.device) == (
        (4, 5),
        (5, 1),
        torch.float64,
        device,
    )


@pytest.mark.parametrize("general", [False, True], ids=["fast", "general"])
def test_a_scalar_at_its_default_one_is_no_graph_input(monkeypatch, general):
    """``add``'s ``alpha`` (a ``Scalar`` defaulting to 1) called with the int 1 records no
    graph input (operand None, lowered as the constant 1); any other value, the float 1.0
    included (it promotes an int tensor's result to a float error in eager), stays one."""
    if general:
        monkeypatch.setattr(generated_kernels, "LazyTensor", type("NotLazy", (), {}))
        monkeypatch.setattr(kernel_support, "trace", None)
    a, b = torch.arange(6.0).reshape(2, 3), torch.full((2, 3), 3.0)
    la, lb = a.to(LAZY), b.to(LAZY)
    default, two, float_one = (torch.add(la, lb, alpha=alpha) for alpha in (1, 2, 1.0))
    assert lr.inner(default)._value.node.operands[2] is None
    assert lr.inner(two)._value.node.operands[2].node.value == 2
    assert lr.inner(float_one)._value.node.operands[2].node.value == 1.0
    for result, alpha in ((default, 1), (two, 2), (float_one, 1.0)):
        torch.testing.assert_close(result.cpu(), torch.add(a, b, alpha=alpha))
    ints = torch.arange(6).to(LAZY)
    total = torch.sub(ints, ints.to(LAZY), alpha=1).cpu()
    assert total.dtype == torch.int64 and torch.equal(total, torch.zeros(6, dtype=torch.int64))
