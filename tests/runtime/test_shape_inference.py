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
