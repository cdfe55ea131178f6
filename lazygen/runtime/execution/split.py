"""Splitting a step's graph so that its single-element results come first.

Training loops read the loss after every ``mark_step``: with one graph per step the read
waits for the whole step (forward, backward, optimizer update), and the next step's tracing
cannot start meanwhile. ``mark_step`` therefore launches two graphs when a step has both
single-element results (the loss, step counters) and others: first the part that computes
the single-element results, which also hands out every value the rest needs from it; then
the rest, rebuilt to read those values as device data. The loss is ready
once the first part has run, and the second runs while the caller reads it and traces the
next step. Both graphs have a stable structure, so each is compiled once.

Nodes are immutable: the second graph's nodes that read the first graph are rebuilt over
its data, and the tensors of the rest point at the rebuilt nodes; any other holder of the
old nodes keeps a graph that computes the same values.
"""

from __future__ import annotations

from typing import NamedTuple

from ..ir import Node, Value
from ..tracing.tensor import LazyTensor

#: ``Value(node, i)`` without the NamedTuple's Python-level ``__new__`` (hand_over makes one
#: per rebuilt operand, hundreds a step).
_new_value = tuple.__new__


class Split(NamedTuple):
    early: list[LazyTensor]  # the single-element results, synced first
    rest: list[LazyTensor]  # everything else, synced second
    handed_over: list[Value]  # values of the first graph that the second one needs
    readers: list[Node]  # nodes of the second graph that read ``handed_over`` values
    second: list[Node]  # every computed node of the second graph (as traced), in post-order


def single_element(tensor: LazyTensor) -> bool:
    """Whether ``tensor`` holds at most one element (a result the first graph computes)."""
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
        for operand in node.operands:  # ``Node.inputs`` inline: this runs for every node
            if type(operand) is Value:
                stack.append(operand.node)
            elif operand is not None:
                stack.extend(value.node for value in operand if value is not None)
    return seen


def split(tensors: list[LazyTensor]) -> Split | None:
    """How to sync pending ``tensors`` in two graphs; None when there is nothing to split
    (no single-element result, or nothing else)."""
    early, others = [], []
    for t in tensors:
        (early if single_element(t) else others).append(t)
    if not early or not others:
        return None
    first = region([t._value for t in early])
    handed_over: dict[Value, None] = {}
    readers: list[Node] = []
    seen: set[Node] = set()
    done: set[Node] = set()
    stack: list[Node] = []
    for t in others:
        value = t._value
        if value.node in first:
            handed_over[value] = None  # a result of the first graph itself
        else:
            stack.append(value.node)
    order: list[Node] = []  # post-order: operands before their users
    while stack:
        node = stack[-1]
        if node in done or node.is_input:
            stack.pop()
        elif node in seen:  # its operands are done
            stack.pop()
            done.add(node)
            order.append(node)
        else:
            seen.add(node)
            reads = False
            for operand in node.operands:  # ``Node.inputs`` inline: this runs for every node
                if type(operand) is Value:
                    operand_node = operand.node
                    if operand_node in first:
                        handed_over[operand] = None
                        reads = True
                    elif operand_node not in done:
                        stack.append(operand_node)
                elif operand is not None:
                    for value in operand:
                        if value is None:
                            continue
                        if value.node in first:
                            handed_over[value] = None
                            reads = True
                        elif value.node not in done:
                            stack.append(value.node)
            if reads:
                readers.append(node)
    return Split(early, others, list(handed_over), readers, order)


def hand_over(plan: Split, data_of: dict[Value, Value]) -> dict[Node, Node]:
    """Point the rest of the tensors at a second graph that reads the first graph's results
    as device data. Nodes stay as they are (other tensors and caches may share them): each
    node of the second graph that reads a handed-over value, directly or through another
    node, is rebuilt over the data (``rebuild``); the others are kept. Returns the rebuilt
    nodes by the node each replaces."""
    rebuilt = rebuild(plan.second, data_of)
    replaced = data_of.get
    for tensor in plan.rest:
        value = tensor._value
        data = replaced(value)
        if data is not None:  # a result of the first graph itself
            tensor._value = data
        elif value.node in rebuilt:
            tensor._value = _new_value(Value, (rebuilt[value.node], value.index))
    return rebuilt


def rebuild(second: list[Node], data_of: dict[Value, Value]) -> dict[Node, Node]:
    """Each node of ``second`` (post-order) that reads a value of ``data_of``, directly or
    through another node, rebuilt over the data (``Node.with_operands``), by the node it
    replaces."""
    rebuilt: dict[Node, Node] = {}
    replaced = data_of.get
    for node in second:  # operands first, so a rebuilt operand is known to its users
        operands = node.operands
        new = None
        for position, operand in enumerate(operands):
            if type(operand) is Value:
                value = replaced(operand)
                if value is None:
                    copy = rebuilt.get(operand.node)
                    if copy is None:
                        continue
                    value = _new_value(Value, (copy, operand.index))
            elif type(operand) is tuple or type(operand) is list:
                value = _substitute(operand, data_of, rebuilt)
                if value is operand:
                    continue
            else:
                continue
            if new is None:
                new = list(operands)
            new[position] = value
        if new is not None:
            rebuilt[node] = node.with_operands(tuple(new))
    return rebuilt


def _substitute(operands, data_of: dict[Value, Value], rebuilt: dict[Node, Node]):
    """A list operand (``Tensor[]``, ``Tensor?[]``) reading the handed-over data and the
    rebuilt nodes; ``operands`` itself if it reads neither."""
    items = []
    for operand in operands:
        if type(operand) is Value:
            data = data_of.get(operand)
            if data is None:
                copy = rebuilt.get(operand.node)
                data = operand if copy is None else _new_value(Value, (copy, operand.index))
            operand = data
        items.append(operand)
    if all(new is old for new, old in zip(items, operands, strict=True)):
        return operands
    return type(operands)(items)
