"""Which result takes over which donated input's buffer.

``jax.jit(..., donate_argnums=...)`` pairs donated inputs with results by itself: per shape
and dtype, the k-th donated input (in argument order) gives its buffer to the k-th result
(in result order). A training step's results come in the order the tensors were synced,
not in the order of the inputs they replace, so that pairing hands a parameter's buffer to
another parameter's new value: XLA may then only overwrite the buffer once the old
parameter's last reader has run, which with every pair crossed it cannot order, and it
copies each donated input first (59 copies, a quarter of the encoder step's kernels,
measured in docs/benchmarks.md). Donation then saved nothing and cost a copy.

``pair`` finds, for each result, the donated input it most likely replaces: the nearest
one of its shape and dtype among the inputs it reads (an optimizer's new parameter reads
the old one directly: ``param - lr * update``). ``output_order`` then orders the results
so that JAX's pairing is that one; the executable puts them back in the graph's order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from ...ir import Node, Value

#: Nodes a search from one result visits at most: the input a result replaces is within a
#: few nodes of it; the cap bounds the compile-time cost on large graphs.
SEARCH_LIMIT = 64


def pair(order: Sequence[Node], outputs: Sequence[Value], donated: Sequence[int]) -> dict[int, int]:
    """``{result index: position in order}`` for the inputs at positions ``donated``
    (each paired at most once, with a result of its shape and dtype). Inputs the nearest
    search leaves over are paired with results of their shape left over, in order (their
    buffers are still reused, perhaps through a copy)."""
    shape_of = {id(order[i]): order[i].shapes[0] for i in donated}
    position = {id(order[i]): i for i in donated}
    candidates: list[tuple[int, int, int]] = []  # (distance, result, input position)
    for j, value in enumerate(outputs):
        node = value.node
        if node.is_input:
            continue  # a graph input handed back as it is: nothing computes it
        want = node.shapes[value.index]
        for distance, found in _nearest_inputs(node, shape_of, want):
            candidates.append((distance, j, position[found]))
    candidates.sort()
    paired: dict[int, int] = {}
    taken: set[int] = set()
    for _, j, i in candidates:
        if j not in paired and i not in taken:
            paired[j] = i
            taken.add(i)
    left: dict = {}
    for i in donated:
        if i not in taken:
            left.setdefault(order[i].shapes[0], deque()).append(i)
    for j, value in enumerate(outputs):
        if j in paired or value.node.is_input:
            continue
        waiting = left.get(value.node.shapes[value.index])
        if waiting:
            paired[j] = waiting.popleft()
    return paired


def _nearest_inputs(root: Node, shape_of: dict[int, object], want) -> list[tuple[int, int]]:
    """``(distance, id of input node)`` of the donated inputs of shape ``want`` that
    ``root`` reads, breadth first, within ``SEARCH_LIMIT`` nodes."""
    found = []
    seen = {id(root)}
    queue = deque([(root, 0)])
    visited = 0
    while queue and visited < SEARCH_LIMIT:
        node, distance = queue.popleft()
        visited += 1
        for value in node.inputs():
            operand = value.node
            key = id(operand)
            if key in seen:
                continue
            seen.add(key)
            if operand.is_input:
                if shape_of.get(key) == want:
                    found.append((distance + 1, key))
            elif not operand.is_constant:
                queue.append((operand, distance + 1))
    return found


def output_order(count: int, paired: dict[int, int], parameter: dict[int, int]) -> list[int]:
    """The order to return ``count`` results in so that ``jax.jit`` pairs each result in
    ``paired`` with its input: the paired results first, by their input's argument index
    (``parameter``: position in order -> argument index), then the others as they were."""
    first = sorted(paired, key=lambda j: parameter[paired[j]])
    chosen = set(first)
    return first + [j for j in range(count) if j not in chosen]
