"""Hand-written shape functions' results enter the runtime through one function,
`call_shape_function`: lists and tuples of shapes are kept as tuples, anything else is an
error naming the function."""

from __future__ import annotations

import copy

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime import op_registry
from lazygen.runtime.ir import Shape
from lazygen.runtime.ops.facts import CPU_STATISTICS_OPS
from lazygen.runtime.tracing.output_shapes import compute_shapes


def compute_shape_twice(self):
    return [Shape(self.dtype, tuple(self.shape)), (torch.int64, [2])]


def compute_shape_tuple(self):
    return (Shape(self.dtype, (1,)),)


def compute_shape_bad(self):
    return {"shape": (1,)}


def test_list_and_tuple_results_become_tuples_of_shapes():
    x = torch.ones(3)
    shapes = compute_shapes(torch.ops.aten.abs.default, (x,), {}, compute_shape_twice)
    assert shapes == (Shape(torch.float32, (3,)), Shape(torch.int64, (2,)))
    assert type(shapes) is tuple and all(type(s) is Shape for s in shapes)
    hash(shapes)
    assert compute_shapes(torch.ops.aten.abs.default, (x,), {}, compute_shape_tuple) == (
        Shape(torch.float32, (1,)),
    )


def test_any_other_result_names_the_function():
    with pytest.raises(TypeError, match=r"test_shape_inference\.compute_shape_bad returned dict"):
        compute_shapes(torch.ops.aten.abs.default, (torch.ones(3),), {}, compute_shape_bad)


def compute_shape_forgot_an_import(self):
    return [Shapes(self.dtype, tuple(self.shape))]  # noqa: F821 (the newcomer's mistake)


def test_an_error_raised_by_a_backends_shape_function_says_where_to_fix_it():
    """A newcomer's shape function that forgot an import raised a bare NameError from deep
    inside the tracer: the same exception now carries a note naming the function and what
    to do (and is still the NameError, as a shape function may raise on purpose too)."""
    with pytest.raises(NameError) as raised:
        compute_shapes(
            torch.ops.aten.abs.default, (torch.ones(3),), {}, compute_shape_forgot_an_import
        )
    notes = "\n".join(getattr(raised.value, "__notes__", []))
    if not hasattr(raised.value, "add_note"):
        pytest.skip("exception notes need Python 3.11")
    assert "test_shape_inference.compute_shape_forgot_an_import" in notes
    assert "fix that function" in notes


@pytest.mark.parametrize(
    "call",
    [
        lambda h, f: torch.nn.functional.linear(h, f),  # a float16 input, a float32 Linear
        lambda h, f: torch.mm(h, f),
        lambda h, f: torch.addmm(f, h, h),
        lambda h, f: torch.bmm(h[None], f[None]),
        lambda h, f: torch.mv(h, f[0]),
        lambda h, f: torch.dot(h[0], f[0]),
    ],
)
def test_matrix_products_of_two_dtypes_fail_where_traced_as_in_eager(call):
    """Meta kernels accept operands of two dtypes where eager's kernels refuse them: the
    lazy op raises at the user's call (as eager does), not later inside a graph."""
    h = torch.ones(2, 2, dtype=torch.float16)
    f = torch.ones(2, 2)
    with pytest.raises(RuntimeError):
        call(h, f)  # eager's behaviour, the reference
    lh, lf = h.to("lazygen"), f.to("lazygen")
    with pytest.raises(
        RuntimeError,
        match="needs tensors of one dtype.*float16.*float32|"
        "needs tensors of one dtype.*float32.*float16",
    ):
        call(lh, lf)
    assert call(lh, lh).dtype == torch.float16  # one dtype: traced as usual


_A = torch.ops.aten
#: One call of each op of CPU_STATISTICS_OPS: (input, weight, bias, running mean, running var)
_NORM_CALLS = {
    "aten::native_layer_norm": lambda x, w, b, rm, rv: _A.native_layer_norm(
        x, [5], w.new_ones(5), b.new_zeros(5), 1e-5
    ),
    "aten::native_group_norm": lambda x, w, b, rm, rv: _A.native_group_norm(
        x, w, b, 4, 3, 5, 1, 1e-5
    ),
    "aten::native_batch_norm": lambda x, w, b, rm, rv: _A.native_batch_norm(
        x, w, b, rm, rv, True, 0.1, 1e-5
    ),
    "aten::_native_batch_norm_legit": lambda x, w, b, rm, rv: _A._native_batch_norm_legit(
        x, w, b, rm, rv, True, 0.1, 1e-5
    ),
    "aten::_native_batch_norm_legit_functional": lambda x, w, b, rm, rv: (
        _A._native_batch_norm_legit_functional(x, w, b, rm, rv, True, 0.1, 1e-5)
    ),
    "aten::_native_batch_norm_legit_no_training": lambda x, w, b, rm, rv: (
        _A._native_batch_norm_legit_no_training(x, w, b, rm, rv, 0.1, 1e-5)
    ),
    "aten::_batch_norm_with_update": lambda x, w, b, rm, rv: _A._batch_norm_with_update(
        x, w, b, rm, rv, 0.1, 1e-5
    ),
    "aten::_batch_norm_with_update_functional": lambda x, w, b, rm, rv: (
        _A._batch_norm_with_update_functional(x, w, b, rm, rv, 0.1, 1e-5)
    ),
    "aten::_batch_norm_no_update": lambda x, w, b, rm, rv: _A._batch_norm_no_update(
        x, w, b, rm, rv, 0.1, 1e-5
    ),
}


def test_every_cpu_statistics_op_is_checked():
    assert {op_registry.packet_of(name) for name in _NORM_CALLS} == CPU_STATISTICS_OPS


@pytest.mark.parametrize("mixed", [False, True], ids=["same_dtype", "float32_parameters"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("name", sorted(_NORM_CALLS))
def test_normalisation_statistics_have_the_cpu_kernels_dtypes(name, dtype, mixed):
    """Meta kernels give CUDA's float32 statistics for a reduced-precision input; the graph
    runs eager's CPU kernels, whose dtypes the lazy op must declare (see CPU_STATISTICS_OPS)."""
    call = _NORM_CALLS[name]
    x = torch.randn(4, 3, 5, dtype=dtype)
    params = [torch.ones(3), torch.zeros(3), torch.zeros(3), torch.ones(3)]
    params = params if mixed else [p.to(dtype) for p in params]
    want = [t.dtype for t in call(x, *params) if isinstance(t, torch.Tensor)]
    with torch.no_grad():
        got = call(x.to("lazygen"), *[p.to("lazygen") for p in params])
    assert [t.dtype for t in got if isinstance(t, torch.Tensor)] == want


#: The batch norms of CPU_STATISTICS_OPS that take a training flag, evaluating.
_EVAL_CALLS = {
    "aten::native_batch_norm(eval)": lambda x, w, b, rm, rv: _A.native_batch_norm(
        x, w, b, rm, rv, False, 0.1, 1e-5
    ),
    "aten::_native_batch_norm_legit(eval)": lambda x, w, b, rm, rv: (
        _A._native_batch_norm_legit(x, w, b, rm, rv, False, 0.1, 1e-5)
    ),
    "aten::_native_batch_norm_legit_functional(eval)": lambda x, w, b, rm, rv: (
        _A._native_batch_norm_legit_functional(x, w, b, rm, rv, False, 0.1, 1e-5)
    ),
}


@pytest.mark.parametrize("name", sorted({**_NORM_CALLS, **_EVAL_CALLS}))
def test_normalisation_results_have_the_cpu_kernels_sizes(name):
    """In evaluation the CPU kernels give empty saved statistics where meta kernels give one
    per channel; the lazy tensor must claim the sizes of the data behind it (regression: it
    claimed 3 elements for data of 0, and the jax backend's size check refused the graph)."""
    call = {**_NORM_CALLS, **_EVAL_CALLS}[name]
    x = torch.randn(4, 3, 5)
    params = [torch.ones(3), torch.zeros(3), torch.zeros(3), torch.ones(3)]
    want = [tuple(t.shape) for t in call(x, *params)]
    with torch.no_grad():
        got = call(x.to("lazygen"), *[p.to("lazygen") for p in params])
    assert [tuple(t.shape) for t in got] == want
    assert [tuple(t.cpu().shape) for t in got] == want


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.nn.LayerNorm(6),
        lambda: torch.nn.GroupNorm(2, 4),
        lambda: torch.nn.BatchNorm1d(4),
    ],
    ids=["layer_norm", "group_norm", "batch_norm"],
)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_reduced_precision_norm_backward_in_a_later_graph(make, dtype):
    """Regression: a bfloat16 ``LayerNorm`` whose forward ran in one graph and backward in
    the next failed (``native_layer_norm_backward``: "expected scalar type BFloat16 but found
    Float"), as every bf16 transformer with a layer norm did (Phi, OPT, BLOOM, Falcon)."""
    torch.manual_seed(0)
    module = make().to(dtype)
    x = torch.randn(3, 4, 6, dtype=dtype)

    def grads(device):
        m = copy.deepcopy(module).to(device)
        xi = x.to(device).requires_grad_()
        y = m(xi)
        if device != "cpu":
            lr.mark_step()  # the saved statistics cross a graph boundary
        (y.float() * torch.arange(6.0, device=device)).sum().backward()
        return [t.detach().cpu() for t in (xi.grad, m.weight.grad, m.bias.grad)]

    for got, want in zip(grads("lazygen"), grads("cpu"), strict=True):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize(
    "op, args",
    [
        (torch.ops.aten.exponential.default, (2.0,)),
        (torch.ops.aten.cauchy.default, ()),
        (torch.ops.aten.log_normal.default, ()),
        (torch.ops.aten.geometric.default, (0.3,)),
    ],
)
def test_random_ops_given_a_generator_draw_eagers_numbers(op, args):
    """The meta kernels of these ops (torch's reference implementations) refuse any
    generator with an internal AssertionError; shapes never depend on one, so shape
    inference gives them None. (``multinomial`` draws through ``exponential`` with the
    caller's generator.)"""
    results = []
    for device in ("cpu", lr.device()):
        generator = torch.Generator().manual_seed(4)
        results.append(op(torch.ones(2, 5, device=device), *args, generator=generator).cpu())
    assert torch.equal(results[1], results[0])
