"""A captured graph called as one node of the device's pending graph: ``FragmentCall``.

``torch.compile`` of a step whose tensors live on the lazy device captures each of its
aten-level graphs (forward, backward, optimizer) once (``lazygen.dynamo``); replaying one
must not record its nodes again, op by op, which is what costs the lazy device its time
(recording was 6.6 ms of an encoder step whose program runs in 1.4 ms). A replay instead
adds one ``FragmentCall``: the captured graph (a ``Fragment``) applied to this call's
operands. Its outputs are lazy values like any other, so the forward's, backward's and
optimizer's calls of one step pile up in the pending graph and run as one program at the
step's end (a host read, or the next step's first call), where the executor keys, compiles
and donates as it does for any graph: the parameters' and states' old data, which the
optimizer's call replaces, are donated to the new values.

Lowering inlines the fragment: its nodes are lowered through the backend's own context
with its inputs mapped to the call's operands, so every backend runs fragments with no
code of its own, and the program is the one the step's ops would have traced.
"""

from __future__ import annotations

from ..ir import Node, Shape, Value
from . import GraphKey, graph_key, post_order


class Fragment:
    """A captured graph: its nodes in post-order, its inputs (the nodes the call's operands
    stand for, in operand order) and its outputs. Equal when their structure is (the key),
    so two captures of one graph compile once."""

    __slots__ = ("key", "order", "inputs", "outputs", "shapes", "written")

    def __init__(self, order: list[Node], outputs: list[Value], written: dict[int, int]) -> None:
        self.order = order
        self.inputs = [node for node in order if node.is_input]
        self.outputs = outputs
        position = {node: i for i, node in enumerate(order)}
        self.key: GraphKey = graph_key(order, position, outputs)
        self.shapes: tuple[Shape, ...] = tuple(v.node.shapes[v.index] for v in outputs)
        #: ``{output index: input index}``: outputs holding the new value of the tensor an
        #: input was read from (an optimizer's parameters and states), whose old data they
        #: may take over (``FragmentCall.replaces``).
        self.written = written

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other) -> bool:
        return self is other or (type(other) is Fragment and self.key == other.key)

    def __repr__(self) -> str:
        nodes = sum(1 for n in self.order if not n.is_input)
        return f"Fragment({nodes} nodes, {len(self.inputs)} inputs, {self.key!r})"

    @classmethod
    def of(cls, outputs: list[Value], written: dict[int, int]) -> Fragment:
        order, _ = post_order(outputs)
        return cls(order, outputs, written)


class FragmentCall(Node):
    """``fragment(*operands)``: one output per fragment output. ``attrs`` is the fragment
    itself (the graph key holds its structure); the operands are one list, an IR value per
    fragment input."""

    __slots__ = ()
    op_kind = "lazygen::fragment"
    op_name = "fragment"

    def __init__(self, fragment: Fragment, operands: tuple[Value, ...]) -> None:
        super().__init__((operands,), (fragment,), fragment.shapes)

    def lower(self, ctx) -> list:
        fragment = self.attrs[0]
        values = ctx.values
        for node, operand in zip(fragment.inputs, self.operands[0], strict=True):
            values[Value(node, 0)] = values[operand]
        for node in fragment.order:
            if not node.is_input:
                ctx.lower_node(node)
        ctx.node = self
        return [values[v] for v in fragment.outputs]

    def replaces(self, index: int) -> Value | None:
        """The operand whose tensor output ``index`` is the new value of (its old data is
        what a backend that donates should give that output), or None."""
        operand = self.attrs[0].written.get(index)
        return None if operand is None else self.operands[0][operand]
