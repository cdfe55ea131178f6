"""Running a lazy graph op by op, uncompiled: what a step structure that exhausted its
recompile budget does (``budget.py``) instead of compiling once more.

``UncompiledLoweringContext`` is a ``LoweringContext`` whose values are tensors: every generated
``lower()`` calls ``ctx.call(op, ...)``, which here runs ``torch.ops`` at once on the
device data (torch tensors, as the eager fallback assumes too). An op torch does not know
(a backend's non-native op) cannot run so: ``NoTorchOverload``, and the graph is compiled after
all.
"""

from __future__ import annotations

from typing import Any

import torch

from ..errors import LazygenRuntimeError
from ..ir import Node, ScalarData, SizeConstant, Value
from ..lowering_context import LoweringContext, overload_of
from ..state import settings


class NoTorchOverload(LazygenRuntimeError):
    """An op of the graph has no ``torch.ops`` overload to run uncompiled."""


class UncompiledLoweringContext(LoweringContext):
    """Lowers a graph by running it: ``parameter`` takes the next input given."""

    def __init__(self, device: torch.device, inputs: list) -> None:
        super().__init__(device)
        self._feed = iter(inputs)
        self.results: list = []

    def parameter(self, node: Node) -> Any:
        return next(self._feed)

    def set_graph_outputs(self, outputs: list[Value]) -> None:
        self.results = [self.values[v] for v in outputs]

    def tensor(self, v: Value) -> torch.Tensor:
        value = self.values[v]
        if isinstance(v.node, ScalarData):
            dtype = self.number_dtype(v)
            if value.dtype != dtype:
                value = value.to(dtype)
        return value

    def tensor_list(self, vs) -> list:
        return [self.tensor(v) for v in vs]

    def optional_tensor_list(self, vs) -> list:
        return [None if v is None else self.tensor(v) for v in vs]

    def scalar(self, v: Value):
        return self.values[v].item()

    def symint(self, v: Value) -> int:
        value = self.values[v]
        return value if type(v.node) is SizeConstant else int(value.item())

    def symint_list(self, vs) -> list:
        return [self.symint(v) for v in vs]

    def constant(self, value):
        if type(value) is torch.device and value.type == settings.device_type:
            return self.device
        return value

    def call(self, op: str, args: list, kwargs: dict, num_outputs: int) -> list:
        overload = overload_of(op)
        if overload is None:
            raise NoTorchOverload(f"{op} has no torch.ops overload to run uncompiled")
        result = overload(*args, **kwargs)
        if num_outputs == 1 and not isinstance(result, tuple):
            return [result]
        return list(result)

    def unpack_list(self, value, count: int) -> list:
        return list(value)[:count]


class UncompiledGraph:
    """A graph run op by op each time (never cached: it holds the step's nodes)."""

    __slots__ = ("order", "outputs", "device")

    def __init__(self, order: list[Node], outputs: list[Value], device: torch.device) -> None:
        self.order = order
        self.outputs = outputs
        self.device = device

    def run(self, inputs: list) -> list[torch.Tensor]:
        ctx = UncompiledLoweringContext(self.device, inputs)
        with torch.no_grad():
            ctx.lower_graph(self.order, self.outputs)
        return ctx.results

    def run_on_host(self, backend, inputs: list) -> list:
        """``run`` for a backend whose device data is not torch's (``Backend.torch_data``
        false): inputs as torch tensors (device data through ``from_data(..., copy=False)``,
        scalars as 0-dim tensors, seeds as generators seeded with them), results handed
        back to the backend (``to_data``)."""
        nodes = [n for n in self.order if n.is_input]
        host = []
        for node, value in zip(nodes, inputs, strict=True):
            if getattr(node, "is_seed", False):
                host.append(torch.Generator().manual_seed(value))
            elif isinstance(node, ScalarData):
                host.append(torch.tensor(value, dtype=node.shapes[0].dtype))
            else:
                host.append(backend.from_data(value, "cpu", copy=False))
        results = self.run(host)
        return [backend.to_data(r.contiguous(), self.device) for r in results]

    def describe(self) -> str:
        """What ``debug.last_graph()`` shows for it."""
        ops = [n.op_kind or type(n).__name__ for n in self.order if not n.is_input]
        return (
            f"# run uncompiled, op by op (recompile limit reached): {len(ops)} ops\n"
            + "\n".join(ops)
        )
