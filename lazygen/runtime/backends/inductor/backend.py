"""The ``fx`` and ``inductor`` backends: a lazy graph becomes a ``torch.fx.GraphModule`` of
aten overloads (``FXLoweringContext``); ``fx`` runs it as Python, ``inductor`` compiles it
with Inductor (``compile.py``). Both trace with lazygen's built-in op list (shared with the
TorchScript backend) and keep device data on the backing device like it.

Generators. Inductor cannot take a ``torch.Generator`` as an input, and its own random
numbers are not eager's. A graph whose random ops are all fresh draws (dropout's
``bernoulli.p``, ``uniform``, ...: results that read only sizes) is compiled with each draw
made a graph input, drawn eagerly from its generator before every call
(``random_draws.py``, counted as ``InductorHoistedDraw``). A graph with another random op,
or with symbolic sizes, runs as the uncompiled GraphModule on the ``inductor`` backend too:
its ops then draw exactly eager's numbers from the generator state ``rt.generator``
captured (counted as ``InductorUncompiledRandomGraph``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.fx

from ... import metrics
from ...backend_interface import Backend, KernelTables
from ...builtin import tables as op_list
from ...dispatch_modes import without_autograd
from ...graph.dynamic import HiddenSizes
from ...ir import Node, Value
from ...ops.attention_op import TORCH_CPU_LOWERINGS
from .compile import CompiledGraph
from .lowering import INDUCTOR_LOWERINGS, IR_NODE, FXLoweringContext, OpLowering
from .random_draws import WithDraws, arranged, hoist_draws


def _hides_sizes(node: Node) -> bool:
    return any(s is not None and type(s.sizes) is HiddenSizes for s in node.shapes)


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


class InductorBackend(FxBackend):
    """The same GraphModules compiled by Inductor (fused C++ loops on the CPU). Compiling
    takes seconds (a training step's graph: tens of seconds cold on 2 cores, a few from
    Inductor's on-disk cache); lazygen compiles each graph key once."""

    name = "inductor"
    #: A graph compiled for all sizes is compiled with symbolic sizes, guarded
    #: (``CompiledGraph``).
    size_generic = True
    #: Inductor stores an optimizer's new parameters into the parameters themselves.
    writes_inputs = True

    def __init__(self, op_lowerings: dict[str, OpLowering] | None = None) -> None:
        super().__init__(INDUCTOR_LOWERINGS | dict(op_lowerings or {}))

    def compile(self, order: list[Node], outputs: list[Value], device) -> FxExecutable:
        module, ctx = self.graph_module(order, outputs, device)
        hides_sizes = any(_hides_sizes(node) for node in order)
        if ctx.has_generators:
            hoisted = None if hides_sizes else hoist_draws(module)
            if hoisted is None:
                metrics.count("InductorUncompiledRandomGraph")
                return FxExecutable(module, module, compiled=False)
            without, draws, kept = hoisted
            metrics.count("InductorHoistedDraw", len(draws))
            inputs = [node.materialize() for node in ctx.parameters]
            run = WithDraws(draws, kept, CompiledGraph(without, arranged(draws, kept, inputs)))
            return FxExecutable(module, run, compiled=True)
        if hides_sizes:
            # Compiled for all sizes: from the sizes of its first call (the executor
            # compiles it from a copy of the graph whose inputs hold no data).
            return FxExecutable(module, CompiledGraph(module, None, dynamic=True), compiled=True)
        inputs = [node.materialize() for node in ctx.parameters]
        run = CompiledGraph(module, inputs)
        return FxExecutable(module, run, compiled=True)

    def runner(self, executable: FxExecutable) -> Callable[[list], list]:
        """Inductor's code itself, for a graph compiled once for good
        (``CompiledGraph.direct_runner``); ``execute`` otherwise."""
        run = executable.run
        if executable.compiled and isinstance(run, CompiledGraph):
            direct = run.direct_runner()
            if direct is not None:
                return direct
        return super().runner(executable)

    def execute(self, executable: FxExecutable, inputs: list) -> list:
        if executable.compiled:  # Inductor's code turns grad mode off itself (direct.py)
            return list(executable.run(*inputs))
        return super().execute(executable, inputs)

    def dump(self, order: list[Node], outputs: list[Value], device) -> str:
        """The GraphModule Inductor is given (its generated C++ is in its cache dir; set
        ``TORCH_COMPILE_DEBUG=1`` to keep a copy per graph)."""
        return super().dump(order, outputs, device)
