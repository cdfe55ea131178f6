"""Splitting a step's graph so that its single-element results come first.

Training loops read the loss after every ``mark_step``: with one graph per step the read
waits for the whole step (forward, backward, optimizer update), and the next step's tracing
cannot start meanwhile. ``mark_step`` therefore launches two graphs when a step has both
single-element results (the loss, step counters) and others: first the part that computes
the single-element results, which also hands out every value the rest needs from it; then
the rest, whose nodes are rewritten to read those values as device data. The loss is ready
once the first part has run, and the second runs while the caller reads it and traces the
next step. Both graphs have a stable structure, so each is compiled once.

The rewrite changes how a value is represented (computed by a node, or held as data), never
the value, so other tensors that share those nodes stay correct.
"""

from __future__ import annotations

from typing import NamedTuple

from .ir import Node, Value
from .tensor import LazyTensor


class Split(NamedTuple):
    early: list[LazyTensor]  # the single-element results, synced first
    rest: list[LazyTensor]  # everything else, synced second
    handed_over: list[Value]  # values of the first graph that the second one needs
    readers: list[Node]  # nodes of the second graph that read ``handed_over`` values
    second: list[Node]  # every computed node of the second graph


def _single_element(tensor: LazyTensor) -> bool:
    count = 1
    for size in tensor._sizes:
        count *= size
    return count <= 1


def region(roots: list[Value]) -> set[Node]:
    """The computed nodes reachable from ``roots`` (not inputs, nor constants: every graph
    makes its own, so they are never handed over)."""
    seen: set[Node] = set()
    stack = [v.node for v in roots]
    while stack:
        node = stack.pop()
        if node in seen or node.is_input or node.is_constant:
            continue
        seen.add(node)
        stack.extend(value.node for value in node.inputs())
    return seen


def split(tensors: list[LazyTensor]) -> Split | None:
    """How to sync pending ``tensors`` in two graphs; None when there is nothing to split
    (no single-element result, or nothing else)."""
    early = [t for t in tensors if _single_element(t)]
    if not early or len(early) == len(tensors):
        return None
    first = region([t._value for t in early])
    handed_over: dict[Value, None] = {}
    readers: list[Node] = []
    rest = []
    seen: set[Node] = set()
    stack: list[Node] = []
    for t in tensors:
        if _single_element(t):
            continue
        value = t._value
        if value.node in first:
            handed_over[value] = None  # a result of the first graph itself
        else:
            stack.append(value.node)
        rest.append(t)
    while stack:
        node = stack.pop()
        if node in seen or node.is_input:
            continue
        seen.add(node)
        reads = False
        for value in node.inputs():
            if value.node in first:
                handed_over[value] = None
                reads = True
            else:
                stack.append(value.node)
        if reads:
            readers.append(node)
    return Split(early, rest, list(handed_over), readers, list(seen))


def hand_over(plan: Split, data_of: dict[Value, Value]) -> None:
    """Point the readers at the device data that replaced the first graph's values (and
    forget the second graph's node hashes, which covered the operands they had)."""
    for node in plan.readers:
        node.operands = tuple(_substitute(operand, data_of) for operand in node.operands)
    for node in plan.second:
        node._hash = None
    for tensor in plan.rest:
        data = data_of.get(tensor._value)
        if data is not None:  # a result of the first graph itself
            tensor._value = data


def _substitute(operand, data_of):
    if type(operand) is Value:
        return data_of.get(operand, operand)
    if operand is None or type(operand) not in (tuple, list):
        return operand
    return type(operand)(_substitute(o, data_of) for o in operand)
