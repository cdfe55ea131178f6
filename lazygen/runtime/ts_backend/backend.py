"""The TorchScript backend: lower a post-ordered IR graph to ``torch._C.Graph``, compile it
with ``torch._C._create_function_from_graph``, run it on the backing device."""

from __future__ import annotations

import torch

from ..config import settings
from ..ir import Node, Value
from ..lowering import LoweringContext

_executor_configured = False


def _configure_executor() -> None:
    """The profiling executor costs ~10 ms on the first calls of every graph; lazy graphs
    are shape-specialised already, so use the simple executor."""
    global _executor_configured
    if not _executor_configured:
        torch._C._jit_set_profiling_executor(False)
        torch._C._jit_set_profiling_mode(False)
        _executor_configured = True


class TSExecutable:
    __slots__ = ("function", "num_outputs", "graph")

    def __init__(self, function, num_outputs: int, graph) -> None:
        self.function = function
        self.num_outputs = num_outputs
        self.graph = graph


class TSBackend:
    name = "ts"

    def __init__(self) -> None:
        self._counter = 0

    def device_type(self) -> str:
        return torch.device(settings.backing_device).type

    def to_data(self, tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
        return tensor.to(device, copy=True)

    def from_data(self, data: torch.Tensor) -> torch.Tensor:
        return data.to("cpu", copy=True)

    def lower(self, order: list[Node], outputs: list[Value]) -> LoweringContext:
        ctx = LoweringContext(backing=settings.backing_device)
        for node in order:
            if node.is_input:
                ctx.add_parameter(node)
            else:
                ctx.node = node
                ctx.set_outputs(node, node.lower(ctx))
        for value in outputs:
            ctx.graph.registerOutput(ctx.values[value])
        if len(outputs) > 1:
            ctx.graph.makeMultiOutputIntoTuple()
        return ctx

    def compile(self, order: list[Node], outputs: list[Value]) -> TSExecutable:
        _configure_executor()
        ctx = self.lower(order, outputs)
        self._counter += 1
        function = torch._C._create_function_from_graph(f"lazygen_graph_{self._counter}", ctx.graph)
        return TSExecutable(function, len(outputs), ctx.graph)

    def execute(self, executable: TSExecutable, inputs: list[torch.Tensor]) -> list:
        with torch.no_grad():
            result = executable.function(*inputs)
        if executable.num_outputs == 1:
            return [result]
        return list(result)

    def dump(self, order: list[Node], outputs: list[Value]) -> str:
        return str(self.lower(order, outputs).graph)
