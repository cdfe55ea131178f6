"""``LoweringContext``: what a node's ``lower()`` calls to build the TorchScript graph."""

from __future__ import annotations

import torch

from .ir import Value

_TENSOR = torch._C.TensorType.get()
_NUMBER = torch._C.NumberType.get()
_INT = torch._C.IntType.get()
_TENSOR_LIST = torch._C.ListType.ofTensors()
_OPTIONAL_TENSOR_LIST = torch._C.ListType(torch._C.OptionalType(_TENSOR))
_INT_LIST = torch._C.ListType.ofInts()


class LoweringContext:
    """Maps IR values to TorchScript values of one ``torch._C.Graph`` under construction."""

    def __init__(self, graph: torch._C.Graph | None = None, backing=None) -> None:
        self.graph = graph if graph is not None else torch._C.Graph()
        self.backing = torch.device("cpu") if backing is None else torch.device(backing)
        self.values: dict[Value, torch._C.Value] = {}
        self._scalars: dict[Value, torch._C.Value] = {}
        self._ints: dict[Value, torch._C.Value] = {}
        self.parameters: list = []  # input nodes, in graph input order

    # Inputs and results ------------------------------------------------------------------

    def add_parameter(self, node) -> torch._C.Value:
        value = self.graph.addInput()
        value.setType(_TENSOR)
        self.parameters.append(node)
        self.values[Value(node, 0)] = value
        return value

    def set_outputs(self, node, outputs) -> None:
        if len(outputs) != len(node.shapes):
            raise RuntimeError(
                f"lowering of {node.op_name or node.op_kind} returned {len(outputs)} values "
                f"for {len(node.shapes)} outputs"
            )
        for index, output in enumerate(outputs):
            self.values[Value(node, index)] = output

    # One method per argument kind ---------------------------------------------------------

    def tensor(self, v: Value) -> torch._C.Value:
        return self.values[v]

    def optional_tensor(self, v: Value | None) -> torch._C.Value:
        return self.constant(None) if v is None else self.values[v]

    def tensor_list(self, vs) -> torch._C.Value:
        return self._list([self.values[v] for v in vs], _TENSOR_LIST)

    def optional_tensor_list(self, vs) -> torch._C.Value:
        items = [self.constant(None) if v is None else self.values[v] for v in vs]
        return self._list(items, _OPTIONAL_TENSOR_LIST)

    def scalar(self, v: Value) -> torch._C.Value:
        value = self._scalars.get(v)
        if value is None:
            (value,) = self.call("aten::item", [self.values[v]], 1)
            value.setType(_NUMBER)
            self._scalars[v] = value
        return value

    def optional_scalar(self, v: Value | None) -> torch._C.Value:
        return self.constant(None) if v is None else self.scalar(v)

    def symint(self, v: Value) -> torch._C.Value:
        value = self._ints.get(v)
        if value is None:
            (value,) = self.call("aten::Int", [self.values[v]], 1)
            value.setType(_INT)
            self._ints[v] = value
        return value

    def symint_list(self, vs) -> torch._C.Value:
        return self._list([self.symint(v) for v in vs], _INT_LIST)

    def constant(self, value) -> torch._C.Value:
        if isinstance(value, tuple):
            value = list(value)
        if isinstance(value, list) and any(isinstance(v, (torch.dtype, tuple)) for v in value):
            value = [_plain(v) for v in value]
        if isinstance(value, torch.device) and value.type == "lazygen":
            value = self.backing  # the graph runs on the backing device
        return self.graph.insertConstant(value)

    def call(self, kind: str, inputs: list, num_outputs: int) -> list:
        node = self.graph.create(kind, inputs, num_outputs)
        self.graph.insertNode(node)
        return list(node.outputs())

    # Helpers --------------------------------------------------------------------------

    def _list(self, items: list, list_type) -> torch._C.Value:
        node = self.graph.create("prim::ListConstruct", items, 1)
        self.graph.insertNode(node)
        output = node.output()
        output.setType(list_type)
        return output


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value
