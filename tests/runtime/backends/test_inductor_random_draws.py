"""``random_draws.Draw``: a hoisted fresh draw fills one tensor it allocates, with the
in-place overload, and draws the functional op's numbers from the same generator state.

No compile here (the hoisting inside a compiled graph is
``test_inductor_backend.test_fresh_draws_become_inputs_and_the_graph_compiles_with_eagers_numbers``).
"""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from lazygen.runtime.backends.inductor.random_draws import FRESH_DRAWS, Draw

aten = torch.ops.aten

#: Numeric arguments per functional draw (each away from its defaults).
ARGS = {
    aten.bernoulli.p: (0.3,),
    aten.uniform.default: (-1.0, 2.0),
    aten.normal_functional.default: (0.5, 2.0),
    aten.random.default: (),
    aten.random.to: (10,),
    getattr(aten.random, "from"): (3, 12),
    aten.exponential.default: (1.5,),
    aten.cauchy.default: (0.5, 2.0),
    aten.log_normal.default: (1.0, 0.5),
    aten.geometric.default: (0.3,),
}
SIZES = (3, 70)  # not a multiple of a vector width


class _Ops(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.called: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.called.append(func)
        return func(*args, **(kwargs or {}))


def test_every_fresh_draw_has_its_args_here():
    assert set(ARGS) == set(FRESH_DRAWS)


@pytest.mark.parametrize("functional", list(ARGS), ids=str)
def test_a_draw_gives_the_functional_ops_numbers_and_generator_state(functional):
    args = ARGS[functional]
    drawn_from, reference = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    draw = Draw(FRESH_DRAWS[functional], 0, SIZES, torch.float32, args, {})
    got = draw([drawn_from])
    expected = functional(torch.empty(SIZES), *args, generator=reference)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert torch.equal(got, expected)
    assert torch.equal(drawn_from.get_state(), reference.get_state())  # consumed alike


@pytest.mark.parametrize("functional", list(ARGS), ids=str)
def test_a_draw_fills_the_one_tensor_it_allocates(functional):
    """One ``empty`` and the in-place fill: not the functional op, which allocates and
    fills a second tensor."""
    draw = Draw(FRESH_DRAWS[functional], 0, SIZES, torch.float32, ARGS[functional], {})
    with _Ops() as ops:
        draw([torch.Generator().manual_seed(1)])
    assert ops.called == [aten.empty.memory_format, FRESH_DRAWS[functional]]
