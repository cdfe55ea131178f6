"""``JaxLoweringContext``: a lazy graph as a program of JAX op implementations.

Lowering records, per IR node, which implementation (``ops.JAX_OPS``) runs on which slots;
``program_function`` turns the record into one Python function of the graph's inputs that
``jax.jit`` traces once (``backend.py``). Nothing JAX runs at lowering time, so an op the
table lacks fails the lowering with its name before any compile.

Graph inputs arrive as the executor feeds a backend whose data is not torch's
(``Backend.torch_data`` false): device data as ``jax.Array``, wrapped Python numbers as the
numbers (traced by ``jax.jit`` as weakly typed scalars: one graph serves every value), and
random ops' seeds as ints (``Backend.random_numbers = "seed"``).

An implementation is handed the shapes of what it computes (``impl(shapes, ...)``): the
node's own shapes when the call is the node's own op, and, for the other ops a node's
lowering emits (the recurrent layers and cells, a decomposition), the shapes torch's meta
kernels give for the call's arguments (``call_shapes``): every slot's shape is kept as it
is recorded, so each call can be inferred from the ones before it.

A graph compiled for all sizes (``graph/dynamic.py``: its shapes hide their sizes) is
lowered with ``generic`` set: every size an op needs comes from its operands' shapes or
from its size arguments, which are graph inputs read as ``SymInt``s and compiled in per
variant like any ``SymInt`` (``static_inputs``; ``all_sizes.py`` keys the variants). An op
whose implementation reads the traced sizes (registered ``reads_sizes``) refuses such a
graph, which is then compiled for its own sizes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import torch

from ...graph.dynamic import HiddenSizes, SizeHidden
from ...ir import Node, ScalarData, Shape, SizeConstant, Value
from ...lowering_context import LoweringContext, fixed_number
from ...op_registry import op_string, overload_of, table_key
from ...state import settings
from .dtypes import convert, to_jax

#: Ops whose one ``SymInt[]`` argument equals their result's sizes.
SIZE_IS_RESULT_SHAPE = frozenset({"view_copy", "expand_copy", "empty.memory_format"})


class UnsupportedOpError(NotImplementedError):
    """An op the jax backend has no implementation for (its lowering fails, naming it)."""


class LoweringShapeError(RuntimeError):
    """An op's jax implementation computed other sizes than torch's (a lowering bug)."""


@dataclass(frozen=True, slots=True)
class Ref:
    """A slot of the program: a graph input or an op's result."""

    slot: int


@dataclass(frozen=True, slots=True)
class Cast:
    """A slot read in another dtype (a wrapped Python number as the op takes it)."""

    slot: int
    dtype: torch.dtype


@dataclass(frozen=True, slots=True)
class Instruction:
    """``outputs = impl(shapes, *args, **kwargs)``, arguments resolved from slots."""

    impl: Callable
    op: str
    args: tuple
    kwargs: dict
    outputs: tuple[int, ...]
    shapes: tuple[Shape | None, ...]
    #: One ``Tensor[]`` result (a list, however many tensors it holds).
    returns_list: bool = False


class JaxLoweringContext(LoweringContext):
    """Records a graph's instructions; ``ops`` maps table keys (``op_registry.table_key``) to
    implementations ``impl(shapes, *args, **kwargs)``."""

    def __init__(self, device: torch.device | str | None, ops: dict[str, Callable]) -> None:
        super().__init__(device)
        self.ops = ops
        self.program: list[Instruction] = []
        self.slot_count = 0
        self.input_slots: list[int] = []
        self.output_refs: list[Ref] = []
        #: Inputs read as ``SymInt``s (a slice's start, an index): XLA needs them static,
        #: so their numbers are compiled in, by input position (``backend.py`` guards them:
        #: another number compiles another variant).
        self.static_inputs: dict[int, int] = {}
        #: The numbers to compile in, by input position (``static_inputs`` of a variant).
        self.static_values: dict[int, int] = {}
        #: Lowering a graph compiled for all sizes (its shapes hide their sizes).
        self.generic = False
        #: Under SPMD, the backend's ``sharding.Spmd`` (shardings of placements); None:
        #: the program runs on one device and constraints keep their value as it is.
        self.spmd = None
        #: Under SPMD, the ``jax.sharding.Mesh`` the program's shardings are written on.
        self.mesh = None
        #: Each slot's shape as recorded (inputs, results), or per item for a list result.
        self.slot_shapes: dict[int, Any] = {}
        #: The numbers wrapped-number inputs hold when the graph is lowered, by slot.
        self.scalar_numbers: dict[int, Any] = {}
        #: ``decompose(ctx, name, args, kwargs, num_outputs) -> refs`` for an op the table
        #: lacks (torch's formula of it, ``decomposed.py``), or None: such an op is an error.
        self.decompose: Callable | None = None

    def _new(self) -> Ref:
        ref = Ref(self.slot_count)
        self.slot_count += 1
        return ref

    # Inputs and results ------------------------------------------------------------------

    def parameter(self, node) -> Ref:
        if getattr(node, "is_generator", False) and not getattr(node, "is_seed", False):
            raise UnsupportedOpError(
                "a torch.Generator reached a jax graph: the jax backend draws random numbers "
                "from seeds (Backend.random_numbers = 'seed')"
            )
        ref = self._new()
        self.input_slots.append(ref.slot)
        if node.shapes and isinstance(node.shapes[0], Shape):
            self.slot_shapes[ref.slot] = node.shapes[0]
        if isinstance(node, ScalarData):
            self.scalar_numbers[ref.slot] = node.value
        return ref

    def abstract_parameters(self, mesh=None) -> list:
        """What the executor will feed for each parameter, as ``jax.jit(...).lower`` takes
        it: its number for scalars and seeds (traced as weakly typed scalars), a shape and
        dtype for device data (and, under SPMD, its sharding on the program's ``mesh``)."""
        abstract = []
        for node in self.parameters:
            if isinstance(node, ScalarData) or getattr(node, "is_seed", False):
                abstract.append(node.value)
                continue
            shape = node.shapes[0]
            sharding = None if mesh is None else self.spmd.input_sharding(node, mesh)
            dtype = to_jax(shape.dtype)
            abstract.append(jax.ShapeDtypeStruct(tuple(shape.sizes), dtype, sharding=sharding))
        return abstract

    def compiled_number(self, value):
        """The number a wrapped-number input (a ``Scalar`` argument) holds, compiled in as
        ``SymInt`` inputs are (each run checks it; another number compiles a variant), or
        None for anything else."""
        kind = type(value)
        if kind is not Ref and kind is not Cast or value.slot not in self.scalar_numbers:
            return None
        position = self.input_slots.index(value.slot)
        number = self.static_values.get(position, self.scalar_numbers[value.slot])
        self.static_inputs[position] = number
        return number

    def set_graph_outputs(self, outputs: list[Value]) -> None:
        self.output_refs = [self.values[v] for v in outputs]

    # Arguments ----------------------------------------------------------------------------

    def tensor(self, v: Value) -> Any:
        if isinstance(v.node, ScalarData):
            dtype = self.number_dtype(v)
            number = fixed_number(v)
            if number is not None:
                return jnp.asarray(number, dtype=to_jax(dtype))
            return Cast(self.values[v].slot, dtype)
        return self.values[v]

    def tensor_list(self, vs) -> list:
        return [self.tensor(v) for v in vs]

    def optional_tensor_list(self, vs) -> list:
        return [None if v is None else self.tensor(v) for v in vs]

    def scalar(self, v: Value) -> Any:
        number = fixed_number(v)
        return number if number is not None else self.values[v]

    def symint(self, v: Value) -> Any:
        if type(v.node) is SizeConstant:
            return self.values[v]
        number = fixed_number(v)
        if number is not None:
            return number
        position = self.input_slots.index(self.values[v].slot)
        number = self.static_values.get(position, v.node.value)
        self.static_inputs[position] = number
        return number

    def symint_list(self, vs) -> list:
        node = self.node
        if node is not None and node.op_name in SIZE_IS_RESULT_SHAPE:
            sizes = node.shapes[0].sizes
            if type(sizes) is HiddenSizes:  # compiled for all sizes: the inputs, per variant
                return [self.symint(v) for v in vs]
            if len(sizes) == len(vs) and all(type(s) is int for s in sizes):
                return list(sizes)
        return [self.symint(v) for v in vs]

    def constant(self, value) -> Any:
        kind = type(value)
        if kind is torch.device and value.type == settings.device_type:
            return self.device
        if kind is tuple or kind is list or kind is torch.Size:
            return [self.constant(item) for item in value]
        return value

    def call(self, op, args: list, kwargs: dict, num_outputs: int) -> list:
        name = op_string(op)
        impl = self.ops.get(table_key(name))
        if impl is None:
            if self.decompose is not None:  # torch's formula of the op (``decomposed.py``)
                return self.decompose(self, name, list(args), dict(kwargs), num_outputs)
            raise UnsupportedOpError(
                f"{name} has no implementation on the jax backend (lazygen.runtime.backends."
                "jax.ops); the backend refuses the ops it lacks (refused_ops), so this call "
                "came from a hand-written lowering: add it to the table"
            )
        if self.generic:
            args = self._all_sizes_arguments(name, impl, list(args))
        shapes = self.call_shapes(name, args, kwargs, num_outputs)
        return self.record(impl, name, args, kwargs, num_outputs, shapes)

    def record(self, impl, name: str, args, kwargs: dict, num_outputs: int, shapes) -> list:
        """Append ``impl``'s call on these arguments, computing ``shapes``; its result refs
        (one ref holding a list for an op returning one ``Tensor[]``)."""
        refs = [self._new() for _ in range(num_outputs)]
        outputs = tuple(r.slot for r in refs)
        if num_outputs == 1 and _returns_list(name):
            # one ``Tensor[]`` result (a list) that ``unpack_list`` takes apart
            items = shapes[0] if type(shapes[0]) is list else list(shapes)
            self.slot_shapes[outputs[0]] = items
            instruction = Instruction(
                impl, name, tuple(args), dict(kwargs), outputs, tuple(items), returns_list=True
            )
        else:
            for slot, shape in zip(outputs, shapes, strict=False):
                self.slot_shapes[slot] = shape
            instruction = Instruction(impl, name, tuple(args), dict(kwargs), outputs, shapes)
        self.program.append(instruction)
        return refs

    def constrain(self, value, placement):
        if self.spmd is None:
            return value
        ref = self._new()
        shape = self.node.shapes[0] if self.node is not None else None
        self.slot_shapes[ref.slot] = shape
        impl = self.spmd.constraint(placement)
        self.program.append(
            Instruction(impl, "sharding_constraint", (value,), {}, (ref.slot,), (shape,))
        )
        return ref

    def _all_sizes_arguments(self, name: str, impl: Callable, args: list) -> list:
        """``args`` of ``impl`` in a graph compiled for all sizes: its ``static_args``
        replaced by the numbers of the variant (inputs compiled in, as ``SymInt``s are), or
        ``SizeHidden`` when the op cannot serve every size (the graph is then compiled for
        its own sizes, and the recompile explanation gives this reason)."""
        if getattr(impl, "reads_sizes", False):
            raise SizeHidden(
                f"the jax backend's {name} takes its result's sizes from the traced graph "
                "(registered reads_sizes in lazygen.runtime.backends.jax.ops)"
            )
        for i in getattr(impl, "static_args", ()):
            if i >= len(args) or type(args[i]) not in (Ref, Cast):
                continue  # absent, or a number already compiled in
            slot = args[i].slot
            if slot not in self.input_slots:
                raise SizeHidden(
                    f"the jax backend's {name} takes a size from a value computed in the "
                    "graph; XLA needs sizes known when compiling"
                )
            position = self.input_slots.index(slot)
            self.static_inputs[position] = args[i] = self.static_values.get(position)
        return args

    def call_shapes(self, name: str, args, kwargs: dict, num_outputs: int) -> tuple:
        """The shapes of what ``name`` computes from these arguments: the node's own when
        the call is the node's op, else its meta kernel's answer (a list of shapes for a
        ``Tensor[]`` result); the node's when torch cannot tell (no such op, an argument
        whose shape is unknown)."""
        node = self.node
        own = tuple(node.shapes) if node is not None else (None,) * num_outputs
        if node is None or _is_own_op(node, name):
            return own
        overload = overload_of(name)
        try:
            result = overload(*self.meta(args), **self.meta(kwargs))
        except Exception:  # noqa: BLE001 - torch cannot tell: the node's shapes, as before
            return own
        if isinstance(result, torch.Tensor):
            result = (result,)
        if type(result) is list and num_outputs == 1:
            return ([Shape(t.dtype, tuple(t.shape)) for t in result],)
        if len(result) != num_outputs or not all(isinstance(t, torch.Tensor) for t in result):
            return own
        return tuple(Shape(t.dtype, tuple(t.shape)) for t in result)

    def meta(self, arg):
        """``arg`` with every slot as a meta tensor of its recorded shape (LookupError for
        a slot without one)."""
        kind = type(arg)
        if kind is Ref:
            shape = self.slot_shapes[arg.slot]
            if not isinstance(shape, Shape):
                raise LookupError(f"slot {arg.slot} has no tensor shape")
            return torch.empty(shape.sizes, dtype=shape.dtype, device="meta")
        if kind is Cast:
            return torch.empty((), dtype=arg.dtype, device="meta")
        if kind is list or kind is tuple:
            return [self.meta(a) for a in arg]
        if kind is dict:
            return {k: self.meta(v) for k, v in arg.items()}
        if isinstance(arg, jnp.ndarray):
            return torch.from_numpy(np.asarray(arg)).to("meta")
        if kind is torch.device:
            return torch.device("meta")
        return arg

    def unpack_list(self, value: Ref, count: int) -> list:
        refs = [self._new() for _ in range(count)]
        items = self.slot_shapes.get(value.slot)
        shapes = tuple(items) if type(items) is list and len(items) == count else (None,) * count
        for ref, shape in zip(refs, shapes, strict=True):
            self.slot_shapes[ref.slot] = shape
        self.program.append(
            Instruction(_unpack, "unpack", (value,), {}, tuple(r.slot for r in refs), shapes)
        )
        return refs


def _is_own_op(node: Node, name: str) -> bool:
    """Whether ``name`` (``"aten::add.Tensor"``) is the op ``node`` stands for: its
    ``op_kind`` with or without the overload its ``schema`` names."""
    key = table_key(name)
    return key in (table_key(node.op_kind or ""), table_key(type(node)))


def _returns_list(op: str) -> bool:
    """Whether the overload ``op`` names returns one ``Tensor[]``."""
    overload = overload_of(op)
    if overload is None:
        return False
    returns = overload._schema.returns
    return len(returns) == 1 and isinstance(returns[0].type, torch.ListType)


def _unpack(shapes, values):
    return list(values)


def _resolve(arg, env: list):
    kind = type(arg)
    if kind is Ref:
        return env[arg.slot]
    if kind is Cast:
        return jnp.asarray(env[arg.slot], dtype=to_jax(arg.dtype))
    if kind is list or kind is tuple:
        return [_resolve(a, env) for a in arg]
    return arg


def _cast(value, shape, ins: Instruction, sized: bool):
    """``value`` in the dtype of ``shape`` (None: as it is). With ``sized`` (a graph traced
    for its own sizes), a value whose sizes are not ``shape``'s is refused, naming the op:
    the lazy tensor already holds torch's sizes, so such data would be read as another
    tensor than it claims to be (``cdist``'s empty-batch gradient once was)."""
    if shape is None or value is None:
        return value
    if sized and tuple(value.shape) != tuple(shape.sizes):
        raise LoweringShapeError(
            f"the jax lowering of {ins.op} computed sizes {tuple(value.shape)} where torch "
            f"gives {tuple(shape.sizes)}: a bug in lazygen.runtime.backends.jax.ops, please "
            "report it with this op and its arguments' sizes"
        )
    return convert(value, to_jax(shape.dtype))


def program_function(ctx: JaxLoweringContext) -> Callable:
    """``run(*inputs) -> tuple of results``: the recorded program, for ``jax.jit``. Each
    result is cast to the dtype shape inference gave its node (what torch returns)."""
    program = list(ctx.program)
    inputs = list(ctx.input_slots)
    outputs = [r.slot for r in ctx.output_refs]
    count = ctx.slot_count
    sized = not ctx.generic

    def run(*args):
        env: list = [None] * count
        for slot, arg in zip(inputs, args, strict=True):
            env[slot] = arg
        for ins in program:
            result = ins.impl(
                ins.shapes,
                *[_resolve(a, env) for a in ins.args],
                **{k: _resolve(v, env) for k, v in ins.kwargs.items()},
            )
            if ins.returns_list:
                env[ins.outputs[0]] = [
                    _cast(v, s, ins, sized) for v, s in zip(result, ins.shapes, strict=True)
                ]
                continue
            if len(ins.outputs) == 1 and ins.impl is not _unpack:
                result = [result]
            shapes = ins.shapes if len(ins.shapes) == len(ins.outputs) else (None,) * len(result)
            for slot, value, shape in zip(ins.outputs, result, shapes, strict=True):
                env[slot] = _cast(value, shape, ins, sized)
        return tuple(env[slot] for slot in outputs)

    return run
