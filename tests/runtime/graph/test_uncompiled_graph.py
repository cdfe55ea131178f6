"""``graph/uncompiled.py``: a graph run op by op through ``torch.ops`` (what a step structure
past its recompile budget runs), and the error that sends a graph it cannot run back to
the compiler."""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime import graph
from lazygen.runtime.errors import LazyGraphError
from lazygen.runtime.graph.uncompiled import NoTorchOverload, UncompiledGraph
from lazygen.runtime.ir import DeviceData, Node, Shape, Value


def _graph_of(tensor):
    outputs = [lr.inner(tensor)._value]
    order, _ = graph.post_order(outputs)
    return order, outputs


def test_a_graph_runs_op_by_op_as_eager():
    x = torch.randn(3, 4)
    lazy = x.to("lazygen")
    lr.mark_step()
    y = (lazy.view(4, 3) * 2 + 1).relu().sum(dim=0)
    order, outputs = _graph_of(y)
    inputs = [node.materialize() for node in order if node.is_input]
    (got,) = UncompiledGraph(order, outputs, torch.device("cpu")).run(inputs)
    torch.testing.assert_close(got, (x.view(4, 3) * 2 + 1).relu().sum(dim=0))
    lr.mark_step()


class _Unknown(Node):
    """A backend's own op that torch has no overload for."""

    __slots__ = ()
    op_kind = "mybackend::fused"

    def lower(self, ctx):
        return ctx.call("mybackend::fused", [ctx.tensor(self.operands[0])], {}, 1)


def test_an_op_torch_does_not_know_is_named():
    data = DeviceData(torch.ones(2))
    node = _Unknown((Value(data, 0),), (), (Shape(torch.float32, (2,)),))
    eager = UncompiledGraph([data, node], [Value(node, 0)], torch.device("cpu"))
    with pytest.raises(LazyGraphError) as caught:
        eager.run([data.materialize()])
    assert isinstance(caught.value.__cause__, NoTorchOverload)
    assert "mybackend::fused" in str(caught.value)
