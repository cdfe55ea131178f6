"""The hand-written lowerings of non-native IR nodes (views and `*_view_update`s) compute
what the equivalent eager code computes."""

from __future__ import annotations

import pytest
import torch
from lazygen.runtime.builtin.generated import non_native_ir as ir

import lazygen.runtime as lr
from lazygen.runtime import kernel_support as rt
from lazygen.runtime.execution import executor
from lazygen.runtime.ir import Shape

BASE = torch.arange(24, dtype=torch.float32).reshape(4, 6)
SOURCE = -torch.ones(2, 3)


def _run(cls, tensors, attrs, sizes) -> torch.Tensor:
    """Build a `cls` node over lazy copies of `tensors`, execute it, return the result."""
    lr.init()
    lazy = [lr.inner(t.to("lazygen")) for t in tensors]
    device = rt.device_of(*lazy)
    operands = tuple(rt.tensor(t, device) for t in lazy)
    result = rt.wrap(rt.make_node(cls, operands, attrs, (Shape(torch.float32, sizes),)), device)
    executor.sync([result])
    return result._value.node.data.cpu()


def _updated(view_of):
    expected = BASE.clone()
    view_of(expected).copy_(SOURCE)
    return expected


CASES = {
    "as_strided": (
        ir.AsStrided,
        [BASE],
        ((2, 3), (6, 1), 1),
        (2, 3),
        BASE.as_strided((2, 3), (6, 1), 1),
    ),
    "as_strided_view_update": (
        ir.AsStridedViewUpdate,
        [BASE, SOURCE],
        ((2, 3), (6, 1), 1),
        (4, 6),
        _updated(lambda t: t.as_strided((2, 3), (6, 1), 1)),
    ),
    "diagonal_view_update": (
        ir.DiagonalViewUpdate,
        [BASE[:3, :3].contiguous(), -torch.ones(3)],
        (0, 0, 1),
        (3, 3),
        torch.where(torch.eye(3, dtype=torch.bool), -1.0, BASE[:3, :3]),
    ),
    "narrow": (ir.Narrow, [BASE], ((1, 2), (2, 3)), (2, 3), BASE[1:3, 2:5]),
    "narrow_view_update": (
        ir.NarrowViewUpdate,
        [BASE, SOURCE],
        ((1, 2),),
        (4, 6),
        _updated(lambda t: t[1:3, 2:5]),
    ),
    "select": (ir.Select, [BASE], (1, 0, 6, 2), (4, 3), BASE[:, 0:6:2]),
    "select_view_update": (
        ir.SelectViewUpdate,
        [BASE, -torch.ones(4, 3)],
        (1, 0, 6, 2),
        (4, 6),
        torch.where(torch.arange(6) % 2 == 0, -1.0, BASE),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowering_matches_eager(name):
    cls, tensors, attrs, sizes, expected = CASES[name]
    assert torch.equal(_run(cls, tensors, attrs, sizes), expected)
