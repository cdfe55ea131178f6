"""Within one foreach op, equal Python numbers share one graph input (``shared_scalars``);
elsewhere each number is an input of its own, so that numbers that happen to be equal at
one step do not change the graph's structure."""

from __future__ import annotations

import torch

import lazygen.runtime as lr
from lazygen.runtime import debug

LAZY = "lazygen"


def _graph_inputs(tensors) -> int:
    text = debug.dump_ir(list(tensors), "backend")
    return text.split("):", 1)[0].count("%")


def _lazy_list(n: int) -> list[torch.Tensor]:
    tensors = [torch.randn(3).to(LAZY) for _ in range(n)]
    lr.mark_step()
    return tensors


def test_a_foreach_ops_scalar_is_one_graph_input():
    xs = _lazy_list(4)
    ys = torch._foreach_mul(xs, 0.5)
    assert _graph_inputs(ys) == 4 + 1, debug.dump_ir(ys, "backend")
    for x, y in zip(xs, ys, strict=True):
        torch.testing.assert_close(y.cpu(), x.cpu() * 0.5)


def test_equal_values_of_a_scalar_list_share_an_input_and_others_do_not():
    xs = _lazy_list(4)
    ys = torch._foreach_add(xs, [0.25, 0.25, 2.0, 0.25])
    # 0.25 and 2.0; add.Scalar's alpha of 1 is the constant 1, no input (``dropped_at_one``)
    assert _graph_inputs(ys) == 4 + 2
    expected = [x.cpu() + s for x, s in zip(xs, [0.25, 0.25, 2.0, 0.25], strict=True)]
    for y, e in zip(ys, expected, strict=True):
        torch.testing.assert_close(y.cpu(), e)


def test_kinds_and_signed_zeros_stay_apart():
    """True, 1 and 1.0 are equal as keys and 0.0 == -0.0: each keeps its own input, so
    promotion and the sign of a zero product are eager's."""
    xs = [torch.ones(2, dtype=torch.int64).to(LAZY) for _ in range(3)]
    ys = torch._foreach_mul(xs, [1, 1.0, True])
    assert [y.dtype for y in ys] == [torch.int64, torch.float32, torch.int64]
    fs = _lazy_list(2)
    zs = torch._foreach_mul([f.abs() for f in fs], [0.0, -0.0])
    assert not torch.signbit(zs[0].cpu()).any() and torch.signbit(zs[1].cpu()).all()


def test_numbers_outside_foreach_ops_are_inputs_of_their_own():
    x = torch.randn(3).to(LAZY)
    lr.mark_step()
    y = x * 0.5 + x * 0.5
    assert _graph_inputs([y]) == 1 + 2  # x and the two 0.5s (add's alpha of 1 is a constant)


def test_adamw_steps_compile_once_with_shared_scalars():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3).to(LAZY)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x = torch.randn(5, 4).to(LAZY)
    compiles = []
    for _ in range(6):
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        lr.mark_step()
        compiles.append(lr.metrics.counter_value("UncachedCompile") or 0)
    assert compiles[-1] == compiles[2], compiles  # steps 3-6 replay one graph
