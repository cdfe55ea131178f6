"""Small TorchScript graphs built by hand for backend-level tests."""

import torch


def product_graph() -> tuple[torch._C.Graph, torch._C.Node]:
    """A graph of two tensor inputs ``a``, ``b`` and the node ``mm(a, b)`` (no outputs yet)."""
    graph = torch._C.Graph()
    a, b = graph.addInput(), graph.addInput()
    for value in (a, b):
        value.setType(torch._C.TensorType.get())
    mm = graph.create("aten::mm", [a, b], 1)
    graph.insertNode(mm)
    return graph, mm
