"""Random graphs compiled by Inductor with eager's numbers: their draws become graph inputs.

Every random op of a lazy graph has a generator input of its own, holding the state eager's
call would have started from (``rt.generator``). Inductor cannot take a ``torch.Generator``,
and its own RNG does not draw eager's numbers. But most random ops of a training step are
*fresh draws*: their result reads only the size, dtype and device of their tensor argument
and their numeric arguments, never its values (dropout's ``bernoulli.p``, ``uniform``,
``normal_functional``, ...). Such an op does not need the rest of the graph: it is replaced
by a new graph input, and before each call the draw runs eagerly, with eager's own kernel,
from its generator on an uninitialised tensor of the recorded size. The rest of the graph has
no generator left and Inductor compiles it; the numbers are eager's bit for bit, since each
draw starts from its own copy of the generator state and consumes it as eager's call would.

A graph with another random op (one whose result depends on tensor values, e.g.
``bernoulli`` with a tensor of probabilities, ``multinomial``), or whose sizes are symbolic,
is not rewritten: it runs uncompiled as before (``InductorUncompiledRandomGraph``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType

import torch
import torch.fx

from ...op_registry import base_name
from ..fx.lowering import INPUT_KIND, IR_NODE

aten = torch.ops.aten

#: Overloads whose result depends only on ``self``'s size, dtype and device and on their
#: numeric arguments (``self``'s values are overwritten): drawable before the graph runs.
#: Each maps to the in-place overload the draw calls on the tensor it allocates: the
#: functional op is that in-place fill of a second tensor it allocates itself (``clone``
#: or ``empty_like`` of ``self``), the same numbers from the same generator state, one
#: allocation and dispatch more (a dropout per layer draws once a step; a 512-element
#: draw: 9.0 us of CPU as the functional op, 6.7 us as ``Draw`` makes it).
FRESH_DRAWS: dict[torch._ops.OpOverload, torch._ops.OpOverload] = MappingProxyType(
    {
        aten.bernoulli.p: aten.bernoulli_.float,
        aten.uniform.default: aten.uniform_.default,
        aten.normal_functional.default: aten.normal_.default,
        aten.random.default: aten.random_.default,
        aten.random.to: aten.random_.to,
        getattr(aten.random, "from"): getattr(aten.random_, "from"),  # a Python keyword
        aten.exponential.default: aten.exponential_.default,
        aten.cauchy.default: aten.cauchy_.default,
        aten.log_normal.default: aten.log_normal_.default,
        aten.geometric.default: aten.geometric_.default,
    }
)


@dataclass(frozen=True)
class Draw:
    """One hoisted random op: ``fill(empty(sizes, dtype, device), *args, generator=g,
    **kwargs)`` with ``fill`` the in-place overload of the graph's functional op
    (``FRESH_DRAWS``) and ``g`` the graph input at ``generator``."""

    fill: torch._ops.OpOverload
    generator: int
    sizes: tuple[int, ...]
    dtype: torch.dtype
    args: tuple
    kwargs: dict
    #: ``fill`` called as the Tensor method of its name (``Tensor.bernoulli_``), which
    #: torch's generated binding resolves to the same overload for these arguments
    #: (the tests check which one runs) at ~4.3 us a small draw against ~5.9 us through
    #: the OpOverload's boxed call.
    method: Callable = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", getattr(torch.Tensor, base_name(self.fill)))

    def __call__(self, inputs) -> torch.Tensor:
        gen = inputs[self.generator]  # random ops draw on their generator's (backing) device
        out = torch.empty(self.sizes, dtype=self.dtype, device=gen.device)
        return self.method(out, *self.args, generator=gen, **self.kwargs)


class WithDraws:
    """Runs the draws, then the compiled graph on the draws followed by the kept inputs."""

    __slots__ = ("draws", "kept", "run")

    def __init__(self, draws: list[Draw], kept: list[int], run: Callable) -> None:
        self.draws = draws
        self.kept = kept
        self.run = run

    def __call__(self, *inputs):
        return self.run(*arranged(self.draws, self.kept, inputs))


def arranged(draws: list[Draw], kept: list[int], inputs) -> list:
    """The hoisted graph's inputs for the original graph's ``inputs``: each draw made now,
    then the kept inputs."""
    return [draw(inputs) for draw in draws] + [inputs[i] for i in kept]


def hoist_draws(
    module: torch.fx.GraphModule,
) -> tuple[torch.fx.GraphModule, list[Draw], list[int]] | None:
    """``module`` with each fresh draw replaced by a new placeholder (before the kept ones),
    the draws in that placeholder order, and the positions of the original inputs the new
    module keeps (generator inputs are dropped). None when a generator input is used by
    anything but a fresh draw, or a draw's size is not known as ints."""
    graph = module.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    position = {node: i for i, node in enumerate(placeholders)}
    generators = {n for n in placeholders if n.meta.get(INPUT_KIND) == "generator"}
    if not generators:
        return None
    plan: list[tuple[torch.fx.Node, Draw]] = []
    for gen in generators:
        for user in gen.users:
            draw = _as_draw(user, gen, position)
            if draw is None:
                return None
            plan.append((user, draw))
    plan.sort(key=lambda item: item[1].generator)  # one order for one graph
    new_graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    new_graph.output(new_graph.graph_copy(graph, env))  # metadata copied with each node
    # The drawn inputs come first: the lowering interleaves placeholders with the ops that
    # first use them, so any later position could follow a use.
    first = next(iter(new_graph.nodes))
    for i, (old, _) in enumerate(plan):
        with new_graph.inserting_before(first):
            drawn = new_graph.placeholder(f"drawn_{i}")
        drawn.meta[INPUT_KIND] = "data"
        env[old].replace_all_uses_with(drawn)
        new_graph.erase_node(env[old])
    for gen in generators:
        new_graph.erase_node(env[gen])
    new_graph.lint()
    kept = [i for i, node in enumerate(placeholders) if node not in generators]
    return torch.fx.GraphModule(module, new_graph), [d for _, d in plan], kept


def _as_draw(node: torch.fx.Node, gen: torch.fx.Node, position: dict) -> Draw | None:
    """The draw ``node`` makes from generator placeholder ``gen``, or None if it is not a
    fresh draw of known size."""
    if node.op != "call_function" or node.target not in FRESH_DRAWS:
        return None
    if node.kwargs.get("generator") is not gen or gen in node.args:
        return None
    if len(node.args) < 1 or not isinstance(node.args[0], torch.fx.Node):
        return None
    if any(isinstance(a, torch.fx.Node) for a in node.args[1:]):
        return None
    if any(isinstance(v, torch.fx.Node) for k, v in node.kwargs.items() if k != "generator"):
        return None
    ir = node.meta.get(IR_NODE)
    shape = ir.shapes[0] if ir is not None and len(ir.shapes) == 1 else None
    if shape is None or not all(type(s) is int for s in shape.sizes):
        return None
    kwargs = {k: v for k, v in node.kwargs.items() if k != "generator"}
    fill = FRESH_DRAWS[node.target]
    return Draw(fill, position[gen], tuple(shape.sizes), shape.dtype, node.args[1:], kwargs)
