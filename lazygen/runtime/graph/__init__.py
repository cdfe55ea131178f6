"""A lazy graph's structure: post-order, structural key (exact, and size-generic: every shape
reduced to its dtype and rank, for graphs compiled for all sizes and the recompile budget),
replayable templates, and the cache of compiled graphs (one per backend) that maps keys to
executables and remembers templates. Both keys are computed for every graph compiled, one
entry per node, so they sit side by side."""

from __future__ import annotations

from collections import OrderedDict
from operator import attrgetter, itemgetter

from ..ir import Node, Value
from ..state import settings
from . import size_inputs


def post_order(roots: list[Value]) -> tuple[list[Node], dict[Node, int]]:
    """Nodes reachable from ``roots``, operands first; and each node's position."""
    order: list[Node] = []
    position: dict[Node, int] = {}
    stack: list[tuple[Node, bool]] = [(v.node, False) for v in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if node in position:
            continue
        if expanded:
            position[node] = len(order)
            order.append(node)
            continue
        stack.append((node, True))
        for value in reversed(node.inputs()):
            if value.node not in position:
                stack.append((value.node, False))
    return order, position


def _operand_key(operand, position):
    if type(operand) is Value:
        return (position[operand.node], operand.index)
    if operand is None:
        return None
    return tuple(_operand_key(o, position) for o in operand)


class GraphKey:
    """A graph's structure as a tuple, with its hash computed once: a step that replays a
    template looks its executable up without rehashing (or re-comparing) the whole graph."""

    __slots__ = ("entries", "_hash")

    def __init__(self, entries: tuple) -> None:
        self.entries = entries
        self._hash = hash(entries)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if type(other) is not GraphKey:
            return NotImplemented
        return self._hash == other._hash and self.entries == other.entries

    def __repr__(self) -> str:
        return f"GraphKey({self._hash & 0xFFFFFFFF:08x})"


def graph_key(order: list[Node], position: dict[Node, int], outputs: list[Value]) -> GraphKey:
    """Structure, attributes, shapes and dtypes of the graph; never data values."""
    entries = tuple(
        (type(n), n.attrs, n.shapes, tuple(_operand_key(o, position) for o in n.operands))
        for n in order
    )
    return GraphKey((entries, tuple((position[v.node], v.index) for v in outputs)))


# The size-generic key -------------------------------------------------------------------------------------


def _rank(shape):
    return None if shape is None else (shape.dtype, len(shape.sizes))


def generic_key(key: GraphKey, constants: bool = True) -> GraphKey:
    """``key`` with the sizes of every shape left out (dtypes and ranks kept). With
    ``constants`` false, the values of size constants (sizes traced with dynamic shapes
    off) are left out too: not a key to reuse a compiled graph by (those graphs hold their
    constants), but one telling that two graphs differ in sizes only (``budget.py``): the
    ``SymInt`` attributes that would be size inputs under dynamic shapes are left out."""
    entries, outputs = key.entries
    abstract = tuple(
        (cls, _attrs(entries, entry, constants), tuple(map(_rank, entry[2])), entry[3])
        for entry in entries
        for cls in (entry[0],)
    )
    return GraphKey(("size-generic" if constants else "sizes", abstract, outputs))


def _attrs(entries: tuple, entry: tuple, constants: bool):
    """A node's attributes in a size-generic key: sizes traced as inputs hidden
    (``size_inputs``), a size constant's value dropped unless ``constants``, and without
    ``constants``, the ``SymInt`` attributes equal to a size of the node's tensors too."""
    cls, attrs, shapes, refs = entry
    if cls.size_attrs and size_inputs.has_size_arguments(attrs):
        return size_inputs.generic_attrs(attrs)
    if not constants and cls.size_attrs:
        operands = [entries[p][2][i] for p, i in _refs(refs) if i < len(entries[p][2])]
        return size_inputs.hide_sizes(cls, attrs, size_inputs.sizes_of(shapes, operands))
    return None if not constants and cls.is_constant else attrs


def _refs(refs):
    """The ``(position, index)`` operand references of a key entry, lists flattened."""
    for ref in refs:
        if not ref:  # no operand, or an empty list of them (as_strided's gradient has one)
            continue
        if isinstance(ref[0], tuple) or ref[0] is None:  # a list operand
            yield from (r for r in ref if r is not None)
        else:
            yield ref


# Templates: a graph's post-order and inputs, replayed on the next step of the same structure --


class GraphTemplate:
    """What ``post_order`` + ``graph_key`` found for one graph, per post-order position:
    node class, attrs, shapes and operand references ``(position, index)`` (``None`` for an
    absent optional, a list of them for a list operand). ``replay`` matches a new step's
    graph against it top-down, checking everything the key holds and that distinct
    positions hold distinct nodes (so aliasing of inputs is part of the match), and yields
    the new post-order without walking, hashing or comparing keys.

    For ``replay``, the references flattened in the order it visits them (the outputs, then
    each node's operands from the last position down, a list's entries one by one):
    ``first``, per position, the flat index of its first reference, which fills its slot;
    ``layouts``, per position, its operand count where no operand is a list, else per
    operand ``-1`` (one value or an absent optional) or a list's length; ``claims`` and
    ``claimed_indices``, per flat entry, the position and output index it must hold (an
    absent optional: the extra slot past the nodes', index -1); ``absent``, the flat
    indices of the absent ones."""

    __slots__ = (
        "key", "types", "attrs", "shapes", "refs", "outputs", "inputs", "size", "input_reads",
        "first", "layouts", "claims", "claimed_indices", "absent",
    )  # fmt: skip

    def __init__(self, key: GraphKey, order: list[Node], position: dict, outputs) -> None:
        self.key = key
        self.size = len(order)
        self.types = [type(n) for n in order]
        self.attrs = [n.attrs for n in order]
        self.shapes = [n.shapes for n in order]
        self.refs = [[_ref(o, position) for o in n.operands] for n in order]
        self.outputs = [(position[v.node], v.index) for v in outputs]
        self.inputs = [i for i, n in enumerate(order) if n.is_input]
        #: The operand slots that read an input (``liveness.input_reads``, made on demand).
        self.input_reads: tuple | None = None
        self.first: list = [None] * self.size
        self.claims: list = []
        self.claimed_indices: list = []
        self.absent: list = []
        self.layouts: list = [None] * self.size
        for ref in self.outputs:
            self._claim(ref)
        for i in range(self.size - 1, -1, -1):
            node_refs = self.refs[i]
            if all(ref is None or type(ref) is tuple for ref in node_refs):
                self.layouts[i] = len(node_refs)
                for ref in node_refs:
                    self._claim(ref)
                continue
            layout = []
            for ref in node_refs:
                if ref is None or type(ref) is tuple:
                    layout.append(-1)
                    self._claim(ref)
                else:
                    layout.append(len(ref))
                    for entry in ref:
                        self._claim(entry)
            self.layouts[i] = tuple(layout)

    def _claim(self, ref) -> None:
        if ref is None:
            self.absent.append(len(self.claims))
            self.claims.append(self.size)
            self.claimed_indices.append(-1)
            return
        p, index = ref
        if self.first[p] is None:
            self.first[p] = len(self.claims)
        self.claims.append(p)
        self.claimed_indices.append(index)


def _ref(operand, position):
    if type(operand) is Value:
        return (position[operand.node], operand.index)
    if operand is None:
        return None
    return [None if o is None else (position[o.node], o.index) for o in operand]


class _Absent:
    """Stands in the flat operand list, once checked, for an absent optional (``None``)."""


_ABSENT_VALUE = (_Absent, -1)
_node_of = itemgetter(0)
_index_of = itemgetter(1)
_shapes_of = attrgetter("shapes")
_attrs_of = attrgetter("attrs")


def replay(template: GraphTemplate, outputs: list[Value]) -> list[Node] | None:
    """The post-order of ``outputs``' graph if it has ``template``'s structure, else None.

    A step replayed from its plan matches its whole graph here at every step, so this is
    whole-list work: one short Python step per node, C-level list comparisons for the rest
    (checking each node and claiming each operand in Python was ~0.35 us an operand: 0.73
    ms of a 2-layer decoder's ~11 ms step, 863 nodes, ~1,800 references; about half that
    now). Each node is read from its position's first reference (``GraphTemplate.first``)
    and its operands appended to one flat list; at the end each flat entry must hold the
    node of the position the template names and the output index it names, the positions
    the template's classes, shapes and attrs, and distinct nodes (so aliasing is part of
    the match)."""
    first, layouts, size = template.first, template.layouts, template.size
    if len(outputs) != len(template.outputs):
        return None
    flat = list(outputs)
    slots: list = [None] * size
    slots.append(_Absent)  # the slot absent optionals name
    try:
        for i in range(size - 1, -1, -1):
            slots[i] = node = flat[first[i]][0]
            operands = node.operands
            layout = layouts[i]
            if type(layout) is int:
                if len(operands) != layout:
                    return None
                flat += operands
            elif not _spread(operands, layout, flat):
                return None
        for k in template.absent:
            if flat[k] is not None:
                return None
            flat[k] = _ABSENT_VALUE
        if list(map(_node_of, flat)) != list(map(slots.__getitem__, template.claims)):
            return None
        if list(map(_index_of, flat)) != template.claimed_indices:
            return None
    except (TypeError, IndexError, AttributeError):  # a None or a list where it has a value
        return None
    del slots[size]
    if (
        list(map(type, slots)) != template.types
        or list(map(_shapes_of, slots)) != template.shapes
        or list(map(_attrs_of, slots)) != template.attrs
        or len(set(slots)) != size  # one node in two positions: the aliasing differs
    ):
        return None
    return slots


def _spread(operands, layout: tuple, flat: list) -> bool:
    """Append ``operands`` to ``flat``, a list's entries one by one, if laid out as ``layout``
    says (``GraphTemplate.layouts``)."""
    if len(operands) != len(layout):
        return False
    for operand, kind in zip(operands, layout, strict=True):
        if kind == -1:
            if operand is not None and type(operand) is not Value:
                return False
            flat.append(operand)
        else:
            if type(operand) is not tuple or len(operand) != kind:
                return False
            flat += operand
    return True


_TEMPLATES_PER_SIGNATURE = 4


def _signature(outputs: list[Value]) -> tuple:
    return tuple([(type(v.node), v.index) for v in outputs])


class GraphCache:
    """One backend's compiled graphs by ``GraphKey`` (least recently used evicted first,
    bounded by ``config.set_compile_cache_size``) and the templates that replay them. Every
    backend has its own: a graph compiled by one backend is never run by another, and a
    fault in one backend's compile leaves the others' caches untouched."""

    __slots__ = ("executables", "templates", "structures")

    def __init__(self) -> None:
        self.executables: OrderedDict = OrderedDict()
        self.templates: dict = {}  # output signature -> [GraphTemplate], most recently used first
        #: Per step structure, what its compiles were (``budget.Structure``).
        self.structures: dict = {}

    def __len__(self) -> int:
        return len(self.executables)

    def get(self, key: GraphKey):
        executable = self.executables.get(key)
        if executable is not None:
            self.executables.move_to_end(key)
        return executable

    def put(self, key: GraphKey, executable) -> None:
        self.executables[key] = executable
        self.trim()

    def forget(self, key: GraphKey) -> None:
        """Drop a graph whose run failed: a later, fixed lowering must not reuse it."""
        self.executables.pop(key, None)

    def trim(self) -> None:
        while len(self.executables) > settings.compile_cache_size:
            self.executables.popitem(last=False)

    def clear(self) -> None:
        self.executables.clear()
        self.templates.clear()
        self.structures.clear()

    def find_template(self, outputs: list[Value]) -> tuple[GraphTemplate | None, list[Node] | None]:
        candidates = self.templates.get(_signature(outputs))
        if candidates:
            executables = self.executables
            for i, template in enumerate(candidates):
                if template.key not in executables:  # evicted: its graph is compiled no more
                    continue
                order = replay(template, outputs)
                if order is not None:
                    if i:
                        candidates.insert(0, candidates.pop(i))
                    return template, order
        return None, None

    def remember_template(self, template: GraphTemplate, outputs: list[Value]) -> None:
        templates, executables = self.templates, self.executables
        candidates = templates.setdefault(_signature(outputs), [])
        candidates[:] = [p for p in candidates if p.key in executables and p.key != template.key]
        candidates.insert(0, template)
        del candidates[_TEMPLATES_PER_SIGNATURE:]
        if len(templates) > 2 * settings.compile_cache_size + 16:  # signatures of evicted graphs
            for signature in [s for s, ps in templates.items() if ps is not candidates]:
                templates[signature] = [p for p in templates[signature] if p.key in executables]
                if not templates[signature]:
                    del templates[signature]
