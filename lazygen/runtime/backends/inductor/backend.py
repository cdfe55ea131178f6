"""The ``inductor`` backend: the ``fx`` backend's ``torch.fx.GraphModule``s of aten overloads
(``backends/fx``), compiled by Inductor (``compile.py``), with its own lowerings of a few ops
(``op_lowerings.py``). The only backend built on another: it imports ``backends/fx``.

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

from ... import metrics
from ...graph.dynamic import HiddenSizes
from ...ir import Node, Value
from ..fx.backend import FxBackend, FxExecutable
from ..fx.lowering import OpLowering
from .compile import CompiledGraph
from .op_lowerings import INDUCTOR_LOWERINGS
from .random_draws import WithDraws, arranged, hoist_draws


def _hides_sizes(node: Node) -> bool:
    return any(s is not None and type(s.sizes) is HiddenSizes for s in node.shapes)


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
