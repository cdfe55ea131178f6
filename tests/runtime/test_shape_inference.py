"""Hand-written shape functions' results enter the runtime through one function,
`call_shape_function`: lists and tuples of shapes are kept as tuples, anything else is an
error naming the function."""

from __future__ import annotations

import pytest
import torch

from lazygen.runtime.ir import Shape
from lazygen.runtime.shape_inference import compute_shapes


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
