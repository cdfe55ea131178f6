"""Ops the jax op table lacks, lowered through torch's own decompositions.

Many ops of the built-in list are, in torch, formulas of other ops (``hardswish``,
``upsample_nearest2d``, ``reflection_pad2d``, ``native_group_norm``, ``mse_loss``...):
``torch._decomp`` holds those formulas as Python functions. For an op without an
implementation in ``ops.JAX_OPS``, the backend traces its decomposition with ``make_fx`` on
meta tensors of the call's shapes (decomposing, recursively, only ops the table lacks) and,
when every op of the traced graph is in the table, lowers the call as that graph's ops
(``lower``); the refusal predicate (``refuses``) asks the same question at trace time, so a
call is either lowered this way or runs eagerly, never half of each.

What a trace fixes, and why it is keyed so:

* Sizes: the decomposition reads the call's sizes (an interpolation's index tensors, a
  padding's ranges), so a graph holding a decomposed op is compiled for its own sizes
  (``SizeHidden`` in a graph compiled for all sizes).
* ``Scalar`` arguments (a norm's ``p``, a loss's margin) and Python numbers given for
  tensors (``i // 4``) are traced as the numbers they hold: a formula may branch on them
  or pass them on as numbers. On the lazy device each is a wrapped-number graph input;
  the lowering compiles its number in, as it does
  ``SymInt`` inputs (``JaxLoweringContext.compiled_number``): each run checks it, and
  another number compiles a variant of the graph (``JaxStaticInputCompile``).
* Random ops are never decomposed: their formulas draw from torch's generators, and the
  jax backend draws from seeds (``ops/sampling.py``).

Traces are kept per op and call signature (dtypes, sizes, attribute and ``Scalar`` values).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import jax.numpy as jnp
import torch
from torch._decomp import core_aten_decompositions, decomposition_table
from torch.fx.experimental.proxy_tensor import make_fx

from ...graph.dynamic import SizeHidden
from ...ir import Shape
from ...op_registry import op_string, overload_of, table_key
from .derived_backwards import DerivedBackwards, above_autograd
from .lowering import Cast, JaxLoweringContext, Ref, UnsupportedOpError

_NUMBER_DTYPES = MappingProxyType(
    {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}
)


def formulas() -> dict:
    """torch's decompositions, by overload: core ATen's formula where torch has one, else
    ``torch._decomp``'s; random and mutating ops left out."""
    merged = dict(decomposition_table)
    merged.update(core_aten_decompositions())
    return {
        overload: fn
        for overload, fn in merged.items()
        if isinstance(overload, torch._ops.OpOverload)
        and torch.Tag.nondeterministic_seeded not in overload.tags
        and not overload._schema.is_mutable
    }


def table(ops: dict[str, Callable], every: dict) -> dict:
    """The formulas of ``every`` (``formulas()``) of the ops ``ops`` lacks."""
    return {overload: fn for overload, fn in every.items() if table_key(overload) not in ops}


#: Markers of a call signature's items: a number (by value) or a tensor (by dtype and sizes).
_NUMBER, _TENSOR = 0, 1

#: ``refuses(op, args, kwargs) -> bool``: whether the backend refuses a call of a table op.
CallRefusal = Callable[[Any, list, dict], bool]


class Decompositions:
    """torch's formulas of the ops ``ops`` lacks, and what lowers through them: a call is
    lowered as its formula's ops when each is in ``ops`` and none of their calls is one the
    backend refuses (``call_refused``: ``i // 0``'s formula divides by 0)."""

    def __init__(self, ops: dict[str, Callable], call_refused: CallRefusal) -> None:
        self.ops = ops
        every = formulas()
        self.table = table(ops, every)
        #: Backward ops torch has no formula for, derived from their forward's
        #: (``derived_backwards.py``): traced as the call itself, never inside the table.
        self.derived = DerivedBackwards(every)
        self.call_refused = call_refused
        #: Call signature -> traced graph (or None: not lowerable).
        self.traces: dict[tuple, Any] = {}

    def __contains__(self, overload) -> bool:
        return overload in self.table or (
            table_key(overload) not in self.ops and overload in self.derived
        )

    def refuses(self, op, args, kwargs) -> bool:
        """The refusal predicate (``refusals.py``): True (run eagerly) for a call whose
        formula does not lower."""
        if op not in self:
            return True
        try:
            leaves = Leaves(op, args, kwargs, _meta_of_lazy, lambda value: None)
        except UnsupportedOpError:
            return True
        return self.trace(op, leaves) is None

    def trace(self, overload, leaves: Leaves):
        """The formula of this call as an FX graph that lowers, or None."""
        key = tuple(leaves.key)
        if key in self.traces:
            return self.traces[key]

        # make_fx applies the table's formula of a table op; a derived one is the call
        function = overload if overload in self.table else self.derived[overload]

        def call(*tensors):
            args, kwargs = leaves.rebuild(tensors)
            return function(*args, **kwargs)

        def traced_call():
            with torch.no_grad():
                return make_fx(call, decomposition_table=self.table)(*leaves.metas)

        def traced_derived():  # its forward formula may write in place (``logical_and_``)
            pure = torch.func.functionalize(call, remove="mutations")
            return make_fx(pure, decomposition_table=self.table)(*leaves.metas)

        graph = None
        try:
            # a derived formula runs autograd: traced where no dispatch has turned it off
            traced = traced_call() if overload in self.table else above_autograd(traced_derived)
            traced.graph.eliminate_dead_code()  # a derived formula's unused forward results
            derived = overload not in self.table
            if self._lowerable(traced.graph) and not (derived and _draws(traced.graph)):
                graph = traced.graph
        except Exception:  # noqa: BLE001 - a formula that cannot trace on meta: not lowerable
            graph = None
        self.traces[key] = graph
        return graph

    def _lowerable(self, graph: torch.fx.Graph) -> bool:
        for node in graph.nodes:
            if node.op == "get_attr":
                return False  # a tensor constant made on the meta device holds no numbers
            if node.op != "call_function" or node.target is operator.getitem:
                continue
            target = node.target
            if not isinstance(target, torch._ops.OpOverload):
                return False
            if table_key(target) not in self.ops:
                return False
            args, kwargs = _values(node.args), _values(node.kwargs)
            if self.call_refused(target, args, kwargs):
                return False
        return True

    def lower(self, ctx: JaxLoweringContext, name: str, args, kwargs, num_outputs: int):
        """``JaxLoweringContext.decompose``: the call's formula recorded in ``ctx``."""
        overload = overload_of(name)
        if overload not in self:
            raise UnsupportedOpError(
                f"{name} has no implementation on the jax backend (lazygen.runtime.backends."
                "jax.ops) and no decomposition in torch._decomp; the backend refuses such ops "
                "(refused_ops), so this call came from a hand-written lowering: add it to the "
                "table"
            )
        if ctx.generic:
            raise SizeHidden(
                f"the jax backend lowers {name} as torch's decomposition, traced for the "
                "call's sizes"
            )
        meta = lambda v: _meta_of_slot(ctx, v)  # noqa: E731
        leaves = Leaves(overload, args, kwargs, meta, lambda v: _number_of_slot(ctx, v))
        graph = self.trace(overload, leaves)
        if graph is None:
            raise UnsupportedOpError(
                f"{name}'s decomposition does not lower to the jax backend's ops for these "
                "arguments, and the backend's refusal did not catch it (refusals.py)"
            )
        return _emit(ctx, graph, leaves, num_outputs)


def _draws(graph: torch.fx.Graph) -> bool:
    """Whether ``graph`` draws random numbers: a backward derived from a forward formula
    that draws (attention's dropout) would draw its mask anew, not the forward's."""
    return any(
        isinstance(node.target, torch._ops.OpOverload)
        and torch.Tag.nondeterministic_seeded in node.target.tags
        for node in graph.nodes
    )


def _values(arg):
    """An FX node's arguments with each node as the value it traced (a meta tensor)."""
    return _plain(torch.fx.node.map_arg(arg, lambda n: n.meta.get("val")))


def _scalar_positions(overload) -> tuple[set[int], set[str]]:
    """Positions and names of the schema's ``Scalar`` / ``Scalar?`` arguments."""
    positions, names = set(), set()
    for i, argument in enumerate(overload._schema.arguments):
        text = str(argument.type)
        if text in ("number", "Scalar", "Optional[number]", "Optional[Scalar]"):
            (names if argument.kwarg_only else positions).add(i)
            names.add(argument.name)
    return positions, names


class Leaves:
    """A call's arguments with every tensor (and ``Scalar``) taken out as a leaf: the
    traced graph's placeholders, in order, and a signature that keys the trace."""

    def __init__(self, overload, args, kwargs, meta: Callable, number: Callable) -> None:
        self.values: list = []  # what each placeholder stands for
        self.metas: list = []
        self.key: list = [overload]
        positions, names = _scalar_positions(overload)
        self.args = [self._take(a, i in positions, meta, number) for i, a in enumerate(args)]
        self.kwargs = {k: self._take(v, k in names, meta, number) for k, v in kwargs.items()}

    def _take(self, value, scalar: bool, meta: Callable, number: Callable):
        kind = type(value)
        if kind is list or kind is tuple:
            return [self._take(v, False, meta, number) for v in value]
        if kind not in _NUMBER_DTYPES and value is not None:
            found = number(value)  # a wrapped number (where the call saw a Python number)
            if found is None and scalar:
                raise UnsupportedOpError("a Scalar argument that is not a wrapped number")
            if found is not None:
                value, kind, scalar = found, type(found), True
        tensor = None if scalar else meta(value)
        if tensor is None:
            self.key.append((_NUMBER, kind, value if kind is not float else repr(value)))
            return value
        self.key.append((_TENSOR, tensor.dtype, tuple(tensor.shape)))
        self.values.append(value)
        self.metas.append(tensor)
        return _Slot(len(self.metas) - 1)

    def rebuild(self, tensors: tuple):
        def put(value):
            if type(value) is _Slot:
                return tensors[value.position]
            if type(value) is list:
                return [put(v) for v in value]
            return value

        return [put(a) for a in self.args], {k: put(v) for k, v in self.kwargs.items()}


class _Slot:
    __slots__ = ("position",)

    def __init__(self, position: int) -> None:
        self.position = position


def _meta_of_lazy(value):
    if isinstance(value, torch.Tensor):
        return torch.empty(value.shape, dtype=value.dtype, device="meta")
    return None


def _number_of_slot(ctx: JaxLoweringContext, value):
    """The Python number the traced call saw where the lowering has a wrapped number: a
    ``FixedScalar``'s constant, or a ``ScalarData`` input's number, compiled in."""
    if isinstance(value, jnp.ndarray) and value.ndim == 0:
        return value.item()
    return ctx.compiled_number(value)


def _meta_of_slot(ctx: JaxLoweringContext, value):
    if type(value) in (Ref, Cast) or isinstance(value, jnp.ndarray):
        return ctx.meta(value)
    return None


def _shape(value) -> Shape | None:
    return Shape(value.dtype, tuple(value.shape)) if isinstance(value, torch.Tensor) else None


def _emit(ctx: JaxLoweringContext, graph: torch.fx.Graph, leaves: Leaves, num_outputs: int):
    """Record ``graph``'s ops in ``ctx``; the refs of its results."""
    env: dict = {}
    inputs = iter(zip(leaves.values, leaves.metas, strict=True))

    def value(arg):
        return _plain(torch.fx.node.map_arg(arg, env.__getitem__))

    for node in graph.nodes:
        if node.op == "placeholder":
            env[node] = next(inputs)[0]
        elif node.op == "output":
            results = node.args[0]
            results = list(results) if isinstance(results, (list, tuple)) else [results]
            refs = [_fresh(ctx, value(r)) for r in results]
            if len(refs) != num_outputs:
                raise UnsupportedOpError(f"{graph}: {len(refs)} results, not {num_outputs}")
            return refs
        elif node.target is operator.getitem:
            env[node] = env[node.args[0]][node.args[1]]
        else:
            env[node] = _emit_call(ctx, node, value(node.args), value(node.kwargs))
    raise UnsupportedOpError("a decomposition's graph without an output")


def _plain(arg):
    """FX's immutable lists and dicts as plain ones (the program resolves those)."""
    if isinstance(arg, (list, tuple)):
        return [_plain(a) for a in arg]
    if isinstance(arg, dict):
        return {k: _plain(v) for k, v in arg.items()}
    return arg


def _emit_call(ctx: JaxLoweringContext, node, args, kwargs):
    target = node.target
    name = op_string(target)
    impl = ctx.ops[table_key(name)]
    val = node.meta.get("val")
    if isinstance(val, (list, tuple)):
        shapes = tuple(_shape(v) for v in val)
        if _returns_list(target):
            (packed,) = ctx.record(impl, name, args, kwargs, 1, (list(shapes),))
            return ctx.unpack_list(packed, len(shapes))
        return ctx.record(impl, name, args, kwargs, len(shapes), shapes)
    return ctx.record(impl, name, args, kwargs, 1, (_shape(val),))[0]


def _returns_list(overload) -> bool:
    returns = overload._schema.returns
    return len(returns) == 1 and isinstance(returns[0].type, torch.ListType)


def _fresh(ctx: JaxLoweringContext, value):
    """A result of the graph as a slot (a decomposition may return a number's leaf)."""
    if type(value) is Ref:
        return value
    shapes = (_shape(ctx.meta(value)),)
    return ctx.record(_identity, "decomposition result", [value], {}, 1, shapes)[0]


def _identity(shapes, value):
    return value
