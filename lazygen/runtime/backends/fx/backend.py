"""The ``fx`` backend: a lazy graph becomes a ``torch.fx.GraphModule`` of aten overloads
(``FXLoweringContext``), run as Python: every op is the eager kernel, so results equal
eager's bit for bit. It traces with lazygen's built-in op list (shared with the TorchScript
backend) and keeps device data on the backing device like it. The ``inductor`` backend
compiles the same GraphModules (``backends/inductor``, built on this one).
"""

from __future__ import annotations

import torch
import torch.fx

from ...backend_interface import Backend, KernelTables
from ...builtin import tables as op_list
from ...dispatch_modes import without_autograd
from ...ir import Node, Value
from ...ops.attention_op import TORCH_CPU_LOWERINGS
from .lowering import IR_NODE, FXLoweringContext, OpLowering


class FxExecutable:
    """A lowered graph ready to run: ``run(*inputs)`` returns one result per output."""

    __slots__ = ("module", "run", "compiled")

    def __init__(self, module: torch.fx.GraphModule, run, compiled: bool) -> None:
        self.module = module
        self.run = run
        self.compiled = compiled


class FxBackend(Backend):
    """Graphs as ``torch.fx.GraphModule``s of aten overloads, run uncompiled: every op is
    the eager kernel, so results equal eager's bit for bit (debugging, portability, cheap
    tests, and the reference the ``inductor`` mode is checked against).

    ``op_lowerings`` lowers ops torch has no overload for (see ``FXLoweringContext``)."""

    name = "fx"
    #: ``_c10d_functional`` ops have ``torch.ops`` overloads (FX calls them) and Inductor
    #: lowerings (it compiles them into its code, waits included).
    collectives_in_graph = True
    #: A GraphModule runs its ops on whatever sizes it is fed (sizes read from inputs).
    size_generic = True

    def __init__(self, op_lowerings: dict[str, OpLowering] | None = None) -> None:
        # The runtime's neutral ops (attention) as torch's CPU kernels, not as calls of
        # their Python torch.library implementation.
        self.op_lowerings = TORCH_CPU_LOWERINGS | dict(op_lowerings or {})

    def kernel_tables(self) -> KernelTables:
        return op_list.kernel_tables()

    def lowering_context(self, device: torch.device) -> FXLoweringContext:
        return FXLoweringContext(device, self.op_lowerings)

    def graph_module(
        self, order: list[Node], outputs: list[Value], device
    ) -> tuple[torch.fx.GraphModule, FXLoweringContext]:
        ctx = self.lower(order, outputs, device)
        ctx.graph.eliminate_dead_code()
        return torch.fx.GraphModule(torch.nn.Module(), ctx.graph), ctx

    def compile(self, order: list[Node], outputs: list[Value], device) -> FxExecutable:
        module, _ = self.graph_module(order, outputs, device)
        return FxExecutable(module, module, compiled=False)

    def execute(self, executable: FxExecutable, inputs: list) -> list:
        with without_autograd():
            return list(executable.run(*inputs))

    def dump(self, order: list[Node], outputs: list[Value], device) -> str:
        module, _ = self.graph_module(order, outputs, device)
        return module.code

    def describe(self, executable: FxExecutable) -> str:
        """The code of the GraphModule it runs (Inductor compiles that one)."""
        return executable.module.code

    def locate_failure(self, order: list[Node], inputs: list) -> tuple[Node, Exception] | None:
        """Interpret the graph one FX node at a time: the IR node of the first that fails."""
        device = next((i.device for i in inputs if isinstance(i, torch.Tensor)), None)
        ctx = self.lowering_context(device)
        ctx.lower_nodes(order)
        ctx.graph.output(())
        interpreter = _Locator(torch.fx.GraphModule(torch.nn.Module(), ctx.graph))
        with torch.no_grad():
            try:
                interpreter.run(*inputs)
            except Exception as error:  # the node that fails
                if interpreter.failed is None:
                    return None
                return interpreter.failed, error.with_traceback(None)
        return None


class _Locator(torch.fx.Interpreter):
    """Remembers the IR node of the FX node that raised."""

    def __init__(self, module: torch.fx.GraphModule) -> None:
        super().__init__(module)
        self.failed: Node | None = None

    def run_node(self, n: torch.fx.Node):
        try:
            return super().run_node(n)
        except Exception:
            self.failed = n.meta.get(IR_NODE)
            raise
