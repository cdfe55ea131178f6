"""`LazyIrSchema`: one IR node class, as a pure function of a schema and node properties.

It answers every question a template asks about a node (its class name, which arguments
are operands and which are attributes, its TorchScript kind, how it lowers) so that the
templates only print.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from lazygen.lazy.arguments import ArgKind, LazyArgument, classify
from lazygen.model.schema import FunctionSchema, OperatorName
from lazygen.model.types import BaseTy, BaseType, ListType

#: Mutually exclusive property groups; a property set on a node replaces its group's default.
PROPERTY_GROUPS: tuple[tuple[str, ...], ...] = (
    ("ShapePrecompute", "ShapeCompute", "ShapeCache"),
    ("Lower", "LowerDeclOnly"),
    ("CanBeReused", "CanBeReusedDeclOnly"),
    ("CreateFn", "CreateFnDeclOnly"),
    ("TreatScalarsAsConstants",),
)
NATIVE_DEFAULTS = frozenset({"ShapePrecompute", "Lower", "CanBeReused"})
NON_NATIVE_DEFAULTS = frozenset({"ShapeCache", "CanBeReused", "LowerDeclOnly"})


def resolve_properties(defaults: frozenset[str], given: frozenset[str]) -> frozenset[str]:
    """`defaults` with each group overridden by the member of it in `given` (if any)."""
    result = set(defaults)
    for group in PROPERTY_GROUPS:
        chosen = [p for p in group if p in given]
        if chosen:
            result.difference_update(group)
            result.add(chosen[-1])
    return frozenset(result)


def node_class_name(name: OperatorName) -> str:
    """torchgen's convention: `bitwise_and.Tensor` -> `BitwiseAndTensor`, `_softmax` -> `Softmax`."""
    words = f"{name.name}_{name.overload}".lower().split("_")
    return "".join(word.capitalize() for word in words)


def snake_name(name: OperatorName) -> str:
    """The kernel / hand-written function suffix: `add_.Tensor` -> `add__tensor`, `sum` -> `sum`."""
    return f"{name.name}_{name.overload.lower()}" if name.overload else name.name


def op_kind_of(name: OperatorName, opkind: str | None) -> str:
    """TorchScript symbol of a node: `aten::<name>`, or the op list's `opkind`."""
    if opkind is None:
        return f"aten::{name.name}"
    return opkind.removeprefix("at::").removeprefix("c10::")


@dataclass(frozen=True)
class LazyIrSchema:
    """An IR node class: its schema, properties, and each argument's lazy role."""

    func: FunctionSchema
    properties: frozenset[str]
    symint: bool
    opkind: str | None = None
    native: bool = True

    @cached_property
    def arguments(self) -> tuple[LazyArgument, ...]:
        """Every argument in schema order, with its operand/attribute slot."""
        constants = "TreatScalarsAsConstants" in self.properties
        result: list[LazyArgument] = []
        operands = attrs = 0
        args = self.func.arguments
        for arg, keyword_only in [(a, False) for a in args.positional] + [
            (a, True) for a in args.kwarg_only + args.out
        ]:
            kind = classify(arg.type, symint=self.symint, scalars_as_constants=constants)
            slot: int | None = None
            if kind.is_operand:
                slot, operands = operands, operands + 1
            elif kind is ArgKind.attribute:
                slot, attrs = attrs, attrs + 1
            result.append(LazyArgument(arg.name, arg.type, kind, keyword_only, arg.default, slot))
        return tuple(result)

    @property
    def operands(self) -> tuple[LazyArgument, ...]:
        return tuple(a for a in self.arguments if a.is_operand)

    @property
    def attributes(self) -> tuple[LazyArgument, ...]:
        return tuple(a for a in self.arguments if a.is_attribute)

    @property
    def attr_schema(self) -> tuple[str, ...]:
        """Each attribute's schema text (``"SymInt? end"``), in ``Node.attrs`` order: what a
        recompile explanation names when an attribute changes."""
        return tuple(f"{a.type} {a.name}" for a in self.attributes)

    @property
    def size_attrs(self) -> tuple[int, ...]:
        """The ``Node.attrs`` slots of attributes the schema types ``SymInt`` (``SymInt?``,
        ``SymInt[]``...): values that may be sizes, which the runtime traces as size
        inputs under dynamic shapes when they equal a size of the node's tensors."""
        return tuple(a.slot for a in self.attributes if a.type.base().name is BaseTy.SymInt)

    @property
    def positional(self) -> tuple[LazyArgument, ...]:
        return tuple(a for a in self.arguments if not a.keyword_only)

    @property
    def keyword(self) -> tuple[LazyArgument, ...]:
        return tuple(a for a in self.arguments if a.keyword_only)

    @property
    def name(self) -> OperatorName:
        return self.func.name

    @property
    def op_name(self) -> str:
        return str(self.func.name)

    @property
    def node_name(self) -> str:
        return node_class_name(self.func.name)

    @property
    def snake_name(self) -> str:
        return snake_name(self.func.name)

    @property
    def op_kind(self) -> str:
        return op_kind_of(self.func.name, self.opkind)

    @property
    def op_ref(self) -> str:
        """What `lower()` passes to `ctx.call`: the op kind with its overload
        (`aten::add.Tensor`, `aten::relu`, `ltc_cast`), so that a backend resolves the exact
        overload (`torch.ops.aten.add.Tensor`) without re-parsing the schema."""
        overload = self.func.name.overload
        return f"{self.op_kind}.{overload}" if overload and self.native else self.op_kind

    @property
    def returns_list(self) -> bool:
        """A single `Tensor[]` return: the number of outputs is known only when traced."""
        return len(self.func.returns) == 1 and self.func.returns[0].type == ListType(
            BaseType(BaseTy.Tensor)
        )

    @property
    def num_outputs(self) -> int:
        return len(self.func.returns)

    @property
    def lowering_hand_written(self) -> bool:
        """`LowerDeclOnly`: `lower()` delegates to a hand-written `lower_<snake name>`."""
        return "LowerDeclOnly" in self.properties or "Lower" not in self.properties

    @property
    def shape_mode(self) -> str:
        """`precompute`: whoever builds the node passes its shapes. `compute` (ShapeCompute)
        and `cache` (ShapeCache): a node built without shapes gets them from the hand-written
        `compute_shape_<snake name>(*operands, *attrs)` when it is built (lazygen's nodes have
        no slot to fill on first use, so ShapeCache computes at construction too)."""
        if "ShapeCompute" in self.properties:
            return "compute"
        return "cache" if "ShapeCache" in self.properties else "precompute"

    @property
    def create(self) -> str:
        """`CreateFn`: a `create` classmethod building (or reusing) the node; `CreateFnDeclOnly`:
        `create` delegates to a hand-written `create_<snake name>`; `none` otherwise."""
        if "CreateFnDeclOnly" in self.properties:
            return "hand_written"
        return "generated" if "CreateFn" in self.properties else "none"

    @property
    def reuse(self) -> str:
        """`default` (equal operands and attrs), `hand_written`, or `never`."""
        if "CanBeReusedDeclOnly" in self.properties:
            return "hand_written"
        return "default" if "CanBeReused" in self.properties else "never"
