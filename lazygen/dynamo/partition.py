"""Split an FX graph around the ops lazygen cannot trace: consecutive nodes that trace
lazily form one segment (captured and compiled like a whole graph), each run of nodes that
went through the eager fallback forms an eager segment, run as it is. Segments follow the
FX graph's order, so the split graph has no cycle. ``Eager`` runs a whole graph that could
not be captured, ``Partitioned`` one split so."""

from __future__ import annotations

import operator

import torch
import torch.fx
from torch.fx.passes.split_module import split_module

from lazygen.runtime import metrics


class EagerSegment(torch.nn.Module):
    """Part of an FX graph run as it is (counted: ``DynamoEagerSegmentRun``)."""

    def __init__(self, gm: torch.fx.GraphModule, nodes: list[str]) -> None:
        super().__init__()
        self.gm = gm
        self.nodes = nodes

    def forward(self, *args):
        metrics.count("DynamoEagerSegmentRun")
        return self.gm(*args)


class LazySegment(torch.nn.Module):
    """Part of an FX graph captured and replayed by lazygen (a ``CompiledGraph``)."""

    def __init__(self, compiled) -> None:
        super().__init__()
        self.compiled = compiled

    def forward(self, *args):
        return self.compiled(list(args))


def _unpacks(node: torch.fx.Node, eager_nodes: set[str]) -> bool:
    """``getitem`` of an eager op's tuple result stays in its segment: a lazy segment takes
    tensors, not the tuple (nested too: ``run_and_save_rng_state`` returns the state and the
    op's own tuple; the caller counts each unpacking node as eager for the next)."""
    if node.target is not operator.getitem:
        return False
    source = node.args[0]
    return isinstance(source, torch.fx.Node) and source.name in eager_nodes


def split(gm: torch.fx.GraphModule, eager_nodes: set[str], make_lazy) -> tuple:
    """``gm`` split into lazy and eager segments; ``make_lazy(segment_gm, name)`` builds the
    callable of a lazy segment. Returns the split module and the eager segments' node
    names, one list per segment."""
    segment_of: dict[str, int] = {}
    eager_ids: set[int] = set()
    eager_nodes = set(eager_nodes)
    segment, last = -1, None
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        eager = node.name in eager_nodes or _unpacks(node, eager_nodes)
        if eager:
            eager_nodes.add(node.name)
        if eager is not last:
            segment, last = segment + 1, eager
        segment_of[node.name] = segment
        if eager:
            eager_ids.add(segment)
    parts = split_module(gm, None, lambda n: segment_of[n.name], keep_original_order=True)
    eager_segments = []
    for name, child in list(parts.named_children()):
        index = int(name.rpartition("_")[2])
        if index in eager_ids:
            nodes = [n.name for n in child.graph.nodes if n.op == "call_function"]
            eager_segments.append(nodes)
            setattr(parts, name, EagerSegment(child, nodes))
        else:
            setattr(parts, name, LazySegment(make_lazy(child, name)))
    return parts, eager_segments


class Eager:
    """An FX graph, or part of one, that could not be captured: run as it is."""

    __slots__ = ("gm", "reasons")

    def __init__(self, gm: torch.fx.GraphModule, reasons: list[str]) -> None:
        self.gm = gm
        self.reasons = reasons

    def __call__(self, args: list):
        metrics.count("DynamoEagerGraphRun")
        return self.gm(*args)


class Partitioned:
    """An FX graph split into lazy and eager segments (``partition.split``)."""

    __slots__ = ("parts",)

    def __init__(self, parts: torch.fx.GraphModule) -> None:
        self.parts = parts

    def __call__(self, args: list):
        return self.parts(*args)
