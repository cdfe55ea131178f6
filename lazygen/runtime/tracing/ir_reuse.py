"""IR reuse across steps (``config.set_reuse_ir(True)``): LTC's ``TrieCache`` semantics.

A training loop traces the same nodes every step. With reuse on, the nodes a step creates
are remembered in order (the step's *path*); the next step walks that path alongside its
own trace and, while each new node equals the remembered one at the same position (class,
attributes, shapes, operands), returns the remembered node instead of building one, as
LTC's trie does (``IrNodeReused_<NodeClass>`` counts it). The first mismatch leaves the
path for the rest of the step. Only the last step's path is kept (strongly, until the next
``mark_step``): a loop's steps repeat, so one step back is all a match needs.

Graph inputs change every step (a parameter's new value is a new ``DeviceData``), so a
remembered node could never match if its operands were the user's input nodes. A node made
here therefore reads each input through a *slot*: a ``ReusedData`` that reads the data of
the ``DeviceData`` it is bound to (one per ``DeviceData`` in a step, shared by the nodes
reading it, so a graph has as many inputs as without reuse), or a private copy of a
``ScalarData`` / generator input. Reusing a node rebinds its slots to this step's inputs
(of the same kind and shape). This is what LTC does by swapping a reused ``DeviceData``'s
handle, made safe here by construction: slots are never tensors' values; a slot is rebound
at most once per step (once bound in a step it only matches the input it reads), and only
after ``mark_step`` materialised every tensor of the previous step, so no tensor still
pending reads the old binding (a run in flight has already read its inputs).
``mark_step`` of one device out of several ends no step here: the path is dropped instead.

The paths are a part of the runtime object (``ReusePath``): ``lr.reset()`` makes a new one,
so nothing a reset leaves behind can be reused.
"""

from __future__ import annotations

import threading
import weakref

from .. import state
from ..ir import DeviceData, Node, Value
from ..metrics import count

__all__ = ["ReusePath", "ReusedData", "end_step", "lookup", "own_inputs", "reset"]


class ReusePath:
    """IR reuse's state (a part of the runtime object): the last step's path and this one's,
    the position in the last one, the slots of this step, and the step's number (a
    ``ReusedData`` bound in this step is bound for good)."""

    __slots__ = (
        "previous", "current", "position", "copied_slots", "step", "step_slots", "state_names",
        "counters",
    )  # fmt: skip

    def __init__(self) -> None:
        self.previous: list[Node] = []  # the last step's path
        self.current: list[Node] = []  # this step's path so far
        self.position = 0  # the next candidate in previous; -1 once this step left the path
        self.copied_slots: weakref.WeakSet[Node] = weakref.WeakSet()  # ScalarData/generator
        self.step = 0  # counts steps of this runtime: a ReusedData bound in one is bound for good
        self.step_slots: dict[Node, ReusedData] = {}  # this step's DeviceData -> its slot
        self.state_names: dict[type, tuple[str, ...]] = {}  # memo of _state_names
        self.counters: dict[type, str] = {}  # node class -> its IrNodeReused_ counter

    def next_step(self, path: list[Node]) -> None:
        """Start a step whose candidates are ``path``; every slot may be rebound once."""
        self.previous, self.current, self.position = path, [], 0
        self.step += 1
        self.step_slots = {}


class ReusedData(DeviceData):
    """A remembered node's view of a graph input: the data of the ``DeviceData`` it is bound
    to (which may still be in flight, or failed: reading it then waits or raises as the
    bound node does). Hashed as a ``DeviceData`` of its shape and placement (it reads only
    data laid out as its first source's)."""

    __slots__ = ("_source", "_step")

    def __init__(self, source: DeviceData, step: int) -> None:
        super().__init__(None, None, source.shapes[0], placement=source.placement)
        self._source = source
        self._step = step  # the step it was bound in

    @property
    def data(self):
        return self._source.data

    def materialize(self):
        return self._source.materialize()


_lock = threading.Lock()  # threads tracing at once: a slot is checked and bound atomically


def _slot(path: ReusePath, node: Node) -> Node:
    """A private input reading what ``node`` (an input) holds. One ``ReusedData`` per
    ``DeviceData`` in a step, shared by the nodes reading it (as they share the
    ``DeviceData`` without reuse), so a graph has as many inputs either way."""
    if isinstance(node, DeviceData):
        slot = path.step_slots.get(node)
        if slot is None:
            slot = path.step_slots[node] = ReusedData(node, path.step)
        return slot
    slot = object.__new__(type(node))  # ScalarData shadows some slots with class attributes
    _bind(path, slot, node)
    path.copied_slots.add(slot)
    return slot


def _accepts(path: ReusePath, slot: Node, node: Node, pending: dict) -> bool:
    """Whether ``slot`` can read ``node`` this step; records the binding in ``pending``.
    A ``ReusedData`` already bound this step (it is shared) only accepts what it reads."""
    if type(slot) is ReusedData:
        if not (
            isinstance(node, DeviceData) and node.shapes == slot.shapes and node.attrs == slot.attrs
        ):
            return False
        bound = pending.get(slot)
        if bound is None and slot._step == path.step:
            bound = slot._source
        if bound is not None:
            return bound is node
    elif not (
        type(node) is type(slot)
        and node.shapes == slot.shapes
        and node.attrs == slot.attrs  # a FixedScalar's number is part of the graph
        and slot in path.copied_slots
    ):
        return False
    pending[slot] = node
    return True


def _state_names(cls: type) -> tuple[str, ...]:
    """The slots of input class ``cls`` that hold its state (a slot ScalarData shadows with a
    read-only class attribute is not state)."""
    found = []
    for klass in cls.__mro__:
        for name in getattr(klass, "__slots__", ()):
            if name != "__weakref__" and type(getattr(cls, name, None)) is type(Node.shapes):
                found.append(name)
    return tuple(found)


def _bind(path: ReusePath, slot: Node, node: Node) -> None:
    if type(slot) is ReusedData:
        slot._source = node
        slot._step = path.step
        path.step_slots[node] = slot
        return
    names = path.state_names.get(type(node))
    if names is None:
        names = path.state_names[type(node)] = _state_names(type(node))
    for name in names:
        setattr(slot, name, getattr(node, name))


def own_inputs(operands):
    """``operands`` with every graph input replaced by a new slot bound to it."""
    return _own(state.part(ReusePath), operands)


def _own(path: ReusePath, operands):
    if type(operands) is Value:
        node = operands.node
        return Value(_slot(path, node), operands.index) if node.is_input else operands
    if operands is None:
        return None
    if isinstance(operands, (tuple, list)):
        return type(operands)(_own(path, o) for o in operands)
    return operands


def _match(path: ReusePath, old, new, bindings: dict) -> bool:
    if type(old) is Value:
        if type(new) is not Value or old.index != new.index:
            return False
        if old.node is new.node:
            return True
        return (
            old.node.is_input and new.node.is_input and _accepts(path, old.node, new.node, bindings)
        )
    if old is None or new is None:
        return old is new
    if isinstance(old, (tuple, list)):
        return (
            isinstance(new, (tuple, list))
            and len(old) == len(new)
            and all([_match(path, a, b, bindings) for a, b in zip(old, new, strict=True)])
        )
    return old == new


def lookup(cls, operands, attrs, shapes) -> Node | None:
    """The last step's node at this point of the trace if it equals the one asked for (its
    slots rebound to ``operands``' inputs), else None; the caller then builds the node with
    ``own_inputs(operands)`` and ``remember``s it."""
    with _lock:
        return _lookup(state.part(ReusePath), cls, operands, attrs, shapes)


def _lookup(path: ReusePath, cls, operands, attrs, shapes) -> Node | None:
    if path.position < 0:
        return None
    if path.position >= len(path.previous):
        path.position = -1
        return None
    old = path.previous[path.position]
    bindings: dict = {}
    if type(old) is cls and old.shapes == shapes and old.can_be_reused(old.operands, attrs):
        olds = old.operands
        if len(olds) == len(operands):
            for a, b in zip(olds, operands, strict=True):
                if a is b or (
                    type(a) is Value and type(b) is Value and a.node is b.node and a[1] == b[1]
                ):
                    continue
                if not _match(path, a, b, bindings):
                    break
            else:
                for slot, node in bindings.items():
                    _bind(path, slot, node)
                path.position += 1
                path.current.append(old)
                count("IrNodeReused")
                name = path.counters.get(cls)
                if name is None:
                    name = path.counters[cls] = f"IrNodeReused_{cls.__name__}"
                count(name)
                return old
    path.position = -1
    return None


def remember(node: Node) -> None:
    """``node`` was built at this point of the trace (the path leaves the last step's)."""
    path = state.part(ReusePath)
    path.position = -1
    path.current.append(node)


def end_step() -> None:
    """``mark_step`` materialised every lazy tensor: this step's path is the next one's."""
    with _lock:
        path = state.part(ReusePath)
        path.next_step(path.current)


def reset() -> None:
    """Forget both paths (``ir_cache.reset()``, reuse switched off, a partial step)."""
    with _lock:
        path = state.part(ReusePath)
        path.next_step([])
        path.copied_slots.clear()
