"""A backend's op list (`yaml/<backend>.yaml`) as frozen data.

The op list says which operators the backend lowers and how: `full_codegen` (IR node,
kernel and lowering generated), `ir_gen` (IR node only), `supported` (kernel written by
hand), `autograd` (hand-written autograd kernels), `symint` (use the SymInt signature) and
`non_native` (IR-only operators with their own schema).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lazygen.errors import Location
from lazygen.model.schema import FunctionSchema, OperatorName

#: Node properties a backend may set on full_codegen / non_native entries.
NODE_PROPERTIES = frozenset(
    {
        "ShapePrecompute",
        "ShapeCompute",
        "ShapeCache",
        "Lower",
        "LowerDeclOnly",
        "CanBeReused",
        "CanBeReusedDeclOnly",
        "CreateFn",
        "CreateFnDeclOnly",
        "TreatScalarsAsConstants",
    }
)

#: Sections naming native operators, in the order they are reported.
OP_SECTIONS = ("full_codegen", "ir_gen", "supported", "autograd", "symint")
#: Sections an operator may appear in only one of.
EXCLUSIVE_SECTIONS = ("full_codegen", "ir_gen", "supported", "autograd")
TOP_LEVEL_KEYS = frozenset({"backend", "cpp_namespace", "non_native", *OP_SECTIONS})


@dataclass(frozen=True, slots=True)
class OpEntry:
    """One operator named in a section of the op list."""

    name: OperatorName
    location: Location


@dataclass(frozen=True, slots=True)
class NonNativeEntry:
    """An IR-only operator: its own schema, TorchScript/op kind and node properties."""

    func: FunctionSchema
    location: Location
    opkind: str | None = None
    properties: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class BackendOpList:
    """A validated backend op list; every name resolves in the catalogue it was checked with."""

    path: str
    backend: str
    cpp_namespace: str | None = None
    full_codegen: tuple[OpEntry, ...] = ()
    ir_gen: tuple[OpEntry, ...] = ()
    supported: tuple[OpEntry, ...] = ()
    autograd: tuple[OpEntry, ...] = ()
    symint: tuple[OpEntry, ...] = ()
    non_native: tuple[NonNativeEntry, ...] = ()

    def section(self, name: str) -> tuple[OpEntry, ...]:
        if name not in OP_SECTIONS:
            raise KeyError(name)
        return getattr(self, name)

    def entries(self) -> Iterator[tuple[str, OpEntry]]:
        for section in OP_SECTIONS:
            for entry in self.section(section):
                yield section, entry

    @property
    def symint_names(self) -> frozenset[OperatorName]:
        return frozenset(e.name for e in self.symint)

    def counts(self) -> dict[str, int]:
        counts = {s: len(self.section(s)) for s in OP_SECTIONS}
        counts["non_native"] = len(self.non_native)
        return counts
