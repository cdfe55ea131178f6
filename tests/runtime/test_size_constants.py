"""Size and stride lists (``SymInt[]`` of ops in symint mode) are constants of the graph,
hashed by value, as LTC's size constants are, never one graph input per int."""

from __future__ import annotations

import torch

import lazygen.runtime as lr
from lazygen.runtime import debug
from lazygen.runtime import kernel_support as rt

LAZY = "lazygen"


def _graph_inputs(backend_text: str) -> int:
    return backend_text.splitlines()[0].count("%")


def test_a_view_size_is_a_constant_not_a_graph_input():
    x = torch.randn(16).to(LAZY)
    lr.mark_step()
    y = x.view(4, 4).expand(2, 4, 4)
    text = debug.dump_ir([y], "backend")
    assert _graph_inputs(text) == 1, text  # x only: no input per size
    assert "aten::Int" not in text, text
    torch.testing.assert_close(y.cpu(), x.cpu().view(4, 4).expand(2, 4, 4))


def test_size_lists_share_their_values():
    device = lr.devices.default_device()
    first = rt.symint_list([3, torch.tensor(4).item()], device)
    assert first is rt.symint_list((3, 4), device)
    assert [v.node.attrs for v in first] == [(3,), (4,)]
