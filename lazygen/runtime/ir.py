"""The IR: ``Shape``, ``Value`` and ``Node`` (see docs/architecture.md, "IR").

Nodes are immutable once built (``with_operands`` makes a rewired copy; the hash is a
memo computed on first use). Graph inputs are ``DeviceData`` (a materialised tensor)
and ``ScalarData`` (a wrapped Python scalar, uploaded as a 0-dim tensor at execution, so a
changing value never changes the graph).
"""

from __future__ import annotations

import copy
from types import MappingProxyType
from typing import NamedTuple

import torch

from . import op_registry, state
from .sources import user_source
from .state import settings


class Shape(NamedTuple):
    dtype: torch.dtype
    sizes: tuple[int, ...]


class Value(NamedTuple):
    node: Node
    index: int


def call_shape_function(fn, *args, **kwargs) -> tuple[Shape, ...]:
    """The shapes a hand-written ``compute_shape_*`` function returns, as the runtime keeps
    them: a tuple of ``Shape``. This is the one place such results enter the runtime (node
    constructors of ShapeCompute/ShapeCache nodes and kernels of ops without a meta kernel
    both call it), so authors may return a list or a tuple of ``Shape`` (or of any
    ``(dtype, sizes)`` pair); anything else is their bug, named here, not a failed hash or
    unpacking deep in the executor."""
    name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
    try:
        result = fn(*args, **kwargs)
    except Exception as error:
        _note_author_code(error, name)
        raise
    if isinstance(result, (list, tuple)) and not isinstance(result, Shape):
        try:
            return tuple([Shape(s[0], tuple(s[1])) for s in result])
        except (TypeError, IndexError, KeyError):
            pass
    raise TypeError(
        f"shape function {name} returned {type(result).__name__} {result!r:.200}: it must "
        "return a list or tuple of lazygen.runtime.ir.Shape(dtype, sizes), one per output"
    )


def _note_author_code(error: Exception, name: str) -> None:
    """Say, under the traceback of an error a backend's own shape function raised (a
    NameError, a wrong attribute: seen when a newcomer forgot an import), that the fix is
    in that function: the error stays the same exception, since a shape function may
    also raise on purpose for a program's invalid arguments, as eager would. lazygen's own
    shape functions raise only on purpose, and get no note."""
    if name.startswith("lazygen.") or not hasattr(error, "add_note"):  # add_note: 3.11+
        return
    error.add_note(
        f"lazygen: raised by the backend's hand-written shape function {name} (called "
        "while tracing, for an op without a meta kernel); unless the program's arguments "
        "are invalid, fix that function (`lazygen validate --hand-written` checks its "
        "signature only)"
    )


class Node:
    """Base of every IR node; generated subclasses set ``op_kind``, ``op_name``, ``schema``."""

    __slots__ = ("operands", "attrs", "shapes", "source", "__weakref__")
    op_kind: str = ""
    op_name: str = ""
    schema: str = ""
    is_input = False
    is_constant = False  # a value every graph recreates itself (``SizeConstant``)
    #: Each attribute's schema text (``"SymInt? end"``), in ``attrs`` order (generated).
    attr_schema: tuple[str, ...] = ()
    #: The ``attrs`` slots the schema types ``SymInt``: sizes, traced as size inputs under
    #: dynamic shapes when they equal a size of the node's tensors (``graph/size_inputs.py``).
    size_attrs: tuple[int, ...] = ()

    #: Whether instances hold nothing beyond ``Node``'s slots (``with_operands`` then
    #: copies those four only), set for each class as it is made (``__init_subclass__``).
    plain_copy: bool = True

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.plain_copy = not _carries_more(cls)

    def __init__(self, operands, attrs, shapes) -> None:
        self.operands = operands
        self.attrs = attrs
        self.shapes = shapes
        self.source = user_source() if settings.record_source else None

    def lower(self, ctx) -> list:
        raise NotImplementedError(f"{type(self).__name__} ({self.op_name}) has no lowering")

    def can_be_reused(self, operands, attrs) -> bool:
        return self.operands == operands and self.attrs == attrs

    def with_operands(self, operands) -> Node:
        """A copy of this node reading ``operands`` instead (same class, attributes, shapes
        and source line): how a graph is rewired without changing a node, which other
        tensors and caches may share. Only computed nodes are rewired."""
        cls = type(self)
        if cls.plain_copy:
            clone = _new_object(cls)
            clone.attrs = self.attrs
            clone.shapes = self.shapes
            clone.source = self.source
        else:
            clone = copy.copy(self)
        clone.operands = operands
        return clone

    def inputs(self) -> list[Value]:
        """The operand values, flattened (absent optionals left out)."""
        flat = []
        for operand in self.operands:
            if type(operand) is Value:
                flat.append(operand)
            elif operand is not None:
                flat.extend(v for v in operand if v is not None)
        return flat

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.op_name or self.op_kind}, shapes={self.shapes})"


_new_object = object.__new__


def _carries_more(cls: type) -> bool:
    """Whether instances of ``cls`` hold state beyond ``Node``'s slots (a ``__dict__`` or
    slots of their own), which ``with_operands`` must then copy too."""
    for klass in cls.__mro__:
        if klass is Node:
            return False
        if "__slots__" not in vars(klass) or klass.__slots__:
            return True
    return True


class DeviceData(Node):
    """A materialised tensor on the backing device; a graph input.

    Its data is whatever the backend holds (``Backend.to_data`` made it, or its
    ``execute``): a torch tensor for backends that run torch (``Backend.torch_data``), else
    the backend's own object (a ``jax.Array``, a handle). ``materialize()`` gives it as it
    is, to the backend's graphs; ``data`` gives a torch tensor on the host for the core's
    own readers (the eager fallback, host reads, printing): for non-torch data, through
    ``Backend.from_data(..., copy=False)`` once per node (zero-copy where DLPack allows).

    Its data may still be in flight: a graph launched asynchronously (``mark_step``) gives
    each output a ``DeviceData`` whose ``data`` waits for that run when first read.

    A backend that spreads data over several devices (``Backend.use_spmd``) says how it is
    laid out: ``placement`` (``sharding.Placement``; None: replicated), held as the node's
    ``attrs`` so that the graph key includes it. The host view of such data is never kept
    (it would be a whole copy of every shard: read again, it is gathered again).
    """

    __slots__ = ("_data", "_launch", "_backend", "_host")
    op_kind = "prim::DeviceData"
    op_name = "device_data"
    is_input = True

    def __init__(
        self,
        data: torch.Tensor | None,
        launch=None,
        shape: Shape | None = None,
        backend=None,
        placement=None,
    ):
        """``backend``: the backend whose non-torch data this is (None for torch data);
        ``shape`` is then required, since only torch data tells its own. ``placement``: how
        the backend laid the data out over its devices (None: replicated, or one device)."""
        self.operands = ()
        self.attrs = () if placement is None else (placement,)
        self._data = data
        self._launch = launch
        self._backend = backend
        self._host = None
        if data is None or backend is not None:
            self.shapes = (shape,)
        else:
            self.shapes = (Shape(data.dtype, tuple(data.shape)),)
        self.source = None

    @classmethod
    def pending(cls, launch, shape: Shape, backend=None, placement=None) -> DeviceData:
        """Data that ``launch`` (an in-flight graph run) will deliver through ``deliver``."""
        return cls(None, launch, shape, backend, placement)

    @property
    def placement(self):
        """How the data is laid out over the backend's devices (None: replicated)."""
        attrs = self.attrs
        return attrs[0] if attrs else None

    @classmethod
    def failed(cls, run, shape: Shape) -> DeviceData:
        """Data that never came: ``run`` (a ``launches.FailedRun``) raises its error on every
        read, and a graph reading this node fails with it."""
        return cls(None, run, shape)

    @property
    def native(self):
        """The data as the backend holds it (waiting for the run that makes it)."""
        data = self._data
        if data is None:
            self._launch.wait()  # delivers into this node, or raises the run's error
            data = self._data
        return data

    @property
    def data(self) -> torch.Tensor:
        """The tensor, contiguous. A graph output may be a strided view (the gradient view
        of a product whose base is synced too); it is copied only when someone reads it,
        which for most such outputs never happens. Non-torch data: its host view."""
        data = self._data
        if data is None:
            self._launch.wait()  # delivers into this node, or raises the run's error
            data = self._data
        if self._backend is not None:
            host = self._host
            if host is None:
                host = self._backend.from_data(data, "cpu", copy=False)
                if not self.attrs:  # a sharded value's host view is a gathered copy
                    self._host = host
            return host
        if not data.is_contiguous():
            data = self._data = data.contiguous()
        return data

    def deliver(self, data: torch.Tensor) -> None:
        self._data = data
        self._launch = None

    def materialize(self):
        if self._backend is not None:
            return self.native
        return self.data


_SCALAR_DTYPES = MappingProxyType(
    {
        float: torch.float64,
        int: torch.int64,
        bool: torch.bool,
        complex: torch.complex128,
    }
)


#: dtype -> ``(Shape(dtype, ()),)``, one tuple per dtype of torch (a constant: every dtype
#: is a ``torch`` attribute), shared by the scalar inputs of that dtype.
_SCALAR_SHAPES = MappingProxyType(
    {d: (Shape(d, ()),) for d in vars(torch).values() if isinstance(d, torch.dtype)}
)


def scalar_shapes(dtype: torch.dtype) -> tuple[Shape]:
    shapes = _SCALAR_SHAPES.get(dtype)
    return (Shape(dtype, ()),) if shapes is None else shapes


class ScalarData(Node):
    """A wrapped Python scalar; a graph input holding a 0-dim tensor of ``dtype``."""

    __slots__ = ("value", "device")
    op_kind = "prim::ScalarData"
    op_name = "scalar_data"
    is_input = True
    # Read-only class attributes shadowing Node's slots: one is built per scalar per op.
    operands = ()
    attrs = ()
    source = None

    def __init__(self, value, dtype: torch.dtype, device: torch.device) -> None:
        self.value = value
        self.device = device
        self.shapes = scalar_shapes(dtype)

    @property
    def data(self) -> torch.Tensor:
        return self.materialize()

    def materialize(self) -> torch.Tensor:
        value = self.value
        kind = type(value)
        if kind is int or kind is bool or (kind is float and value == value and value != 0.0):
            # 0.0 == -0.0 and NaN != NaN as keys: those are built every time.
            key = (kind, value, self.shapes[0].dtype, self.device)
            try:  # a subscript, no call (see ``ScalarTensors``)
                tensors = state.runtime.parts[ScalarTensors]
            except KeyError:
                tensors = state.part(ScalarTensors)
            tensor = tensors.get(key)
            if tensor is None:
                tensor = tensors.keep(
                    key, torch.tensor(value, dtype=self.shapes[0].dtype, device=self.device)
                )
            return tensor
        return torch.tensor(value, dtype=self.shapes[0].dtype, device=self.device)


class FixedScalar(ScalarData):
    """A wrapped Python number whose value is part of the graph: a graph input like
    ``ScalarData`` (fed its 0-dim tensor), but the graph key holds its value, so a backend
    may compile the number in as a constant instead of reading it (``ctx.scalar(v)`` a
    literal, no host read per run). Made only where every run of the graph has the same
    numbers by construction: a Dynamo capture, whose FX graph holds them as literals
    (``kernel_support.fixed_scalars``). The lazy device's own tracing keeps ``ScalarData``:
    a learning rate or a bias correction changes every step, and a constant would compile
    one graph per value."""

    __slots__ = ()
    op_kind = "prim::FixedScalar"
    op_name = "fixed_scalar"

    @property
    def attrs(self) -> tuple[str]:
        # repr keeps apart what == does not: -0.0 and 0.0, 1 and 1.0 and True; NaN == NaN.
        return (repr(self.value),)


class InputWrite(Node):
    """Writes ``value`` into the graph input ``target`` (a ``DeviceData``), in place, after
    every other node of the graph has run (the graph's order puts it last). Made only for
    backends whose graphs may write their inputs (``Backend.writes_inputs``) and only where
    the input is the caller's own tensor, fed as it is: a Dynamo replay of an optimizer
    step, whose parameters and states are then written by the compiled graph instead of
    being returned and copied back. Its one output is ``target`` after the write; nothing
    reads it (it is not a graph output). Lowered as ``aten::copy_``."""

    __slots__ = ()
    op_kind = "lazygen::input_write"
    op_name = "input_write"

    def __init__(self, target: Value, value: Value) -> None:
        super().__init__((target, value), (), (target.node.shapes[target.index],))

    def lower(self, ctx) -> list:
        target, value = self.operands
        return ctx.call(
            op_registry.get("input_write"),
            [ctx.tensor(target), ctx.tensor(value), ctx.constant(False)],
            {},
            1,
        )


class ScalarTable(dict):
    """``(kind, value) -> Value``: the graph inputs of the Python numbers traced on a device
    while a table is set (``tensor.shared_scalars``, ``tensor.fixed_scalars``); equal
    numbers share one. ``node_type`` is the input each new number becomes: ``ScalarData``,
    or ``FixedScalar`` where the numbers are the graph's constants."""

    __slots__ = ("node_type",)

    def __init__(self, node_type: type[ScalarData] = ScalarData) -> None:
        super().__init__()
        self.node_type = node_type


class SizeConstant(Node):
    """One int of a size or stride list (``SymInt[]`` operands of ops in symint mode:
    ``view_copy``'s size, ``expand_copy``'s, ``empty_strided``'s strides...): a constant of
    the graph, hashed by value, as LTC's size constants are. Such lists restate the
    result's shape or layout, which the graph key holds already, so a graph input per int
    would cost a tensor per int per step and change no cache decision. One node per value
    is shared by every graph (``kernel_support.symint_list``)."""

    __slots__ = ()
    op_kind = "prim::SizeConstant"
    op_name = "size_constant"
    is_constant = True

    def __init__(self, value: int) -> None:
        super().__init__((), (value,), scalar_shapes(torch.int64))

    def lower(self, ctx):
        return [ctx.constant(self.attrs[0])]


class ScalarTensors(state.BoundedMemo):
    """Graph inputs of scalar values, shared across steps of this run (a part of the
    runtime object: a reset makes a new, empty one): graphs never write their inputs (nor
    does anything else write device data), so one 0-dim tensor per (value, dtype, device)
    serves. ``ScalarData.materialize`` reaches it by subscript
    (``state.runtime.parts[ScalarTensors]``); bounded by ``limit``."""

    __slots__ = ()
    limit = 1024


def scalar_dtype(value) -> torch.dtype:
    dtype = _SCALAR_DTYPES.get(type(value))
    if dtype is not None:
        return dtype
    if isinstance(value, torch.SymInt):
        return torch.int64
    if isinstance(value, torch.SymFloat):
        return torch.float64
    if isinstance(value, torch.SymBool):
        return torch.bool
    raise TypeError(f"lazygen: not a scalar: {value!r} ({type(value).__name__})")


def _category(dtype: torch.dtype) -> int:
    if dtype.is_complex:
        return 3
    if dtype.is_floating_point:
        return 2
    return 0 if dtype is torch.bool else 1


def wrapped_number_dtype(number: torch.dtype, others) -> torch.dtype:
    """The dtype a Python number in a tensor argument must have as a 0-dim tensor so that type
    promotion treats it as eager treats a wrapped number (lowest priority). ``number`` is its
    natural dtype (float64, int64, complex128, bool); ``others`` are the ``(dtype, dim)`` of
    the op's other tensor arguments."""
    if not others:
        return number
    category = _category(number)
    common = others[0][0]
    for dtype, _ in others[1:]:
        common = torch.promote_types(common, dtype)
    if category > _category(common):  # the number lifts the category: default dtype of it
        default = torch.get_default_dtype()
        if category == 3:
            return torch.complex128 if default is torch.float64 else torch.complex64
        return default if category == 2 else number
    if any(dim for _, dim in others):
        return number  # a 0-dim tensor of the same category loses to dimensioned tensors
    return common  # among 0-dim tensors only: take theirs
