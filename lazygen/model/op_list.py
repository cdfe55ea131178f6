"""A backend's op list (`yaml/<backend>.yaml`) as frozen data.

The op list says which operators the backend lowers and how: `full_codegen` (IR node,
kernel and lowering generated), `ir_gen` (IR node only), `supported` (kernel written by
hand), `autograd` (hand-written autograd kernels), `symint` (use the SymInt signature) and
`non_native` (IR-only operators with their own schema).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lazygen.diagnostics import Diagnostic, Location
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
#: Sections whose pairs need a rule: an operator may be in two of them only if the pair is
#: in `SHARED_SECTIONS`.
EXCLUSIVE_SECTIONS = ("full_codegen", "ir_gen", "supported", "autograd")
#: Section pairs one operator may share, as in torchgen: `ir_gen` only makes the IR node, so
#: its kernel can still be written by hand (`supported`) or be an autograd kernel.
SHARED_SECTIONS = frozenset({frozenset({"ir_gen", "supported"}), frozenset({"ir_gen", "autograd"})})
#: Why an operator cannot be in both sections of a pair (the hint of the error).
CONFLICT_HINTS = {
    frozenset({"full_codegen", "ir_gen"}): "full_codegen already generates its IR node; keep one",
    frozenset({"full_codegen", "supported"}): (
        "full_codegen generates the kernel, supported means you write it; keep one "
        "(ir_gen + supported gives a generated IR node with a hand-written kernel)"
    ),
}
AUTOGRAD_CONFLICT_HINT = (
    "an operator's kernel goes either to the backend or to its autograd key, not both "
    "(as in torchgen)"
)
#: Sections an op listed in `symint` must also appear in (where a kernel signature exists).
SYMINT_HOSTS = ("full_codegen", "supported", "autograd")

#: Keys torchgen accepts that only shape its C++ output: accepted, and why they change
#: nothing here (printed once as a notice, and listed in docs/op-list.md).
IGNORED_KEYS = {
    "class_name": "it names the C++ class declaring the kernels; lazygen's kernels are "
    "module functions",
    "extra_headers": "it adds C++ #includes; lazygen generates Python",
    "use_out_as_primary": "it picks the out= variant as a structured group's C++ kernel; "
    "lazygen registers exactly the overloads the list names",
    "device_guard": "it wraps C++ kernels in a device guard; lazygen's runtime registers "
    "its own device guard",
}
#: Keys of files that are not op lists but inputs of a tool that writes one: torch-mlir's
#: `build_tools/autogen_ltc_backend.yaml`, which its `autogen_ltc_backend.py` turns into
#: the op list torchgen reads. torchgen refuses them; each error says where its ops go.
GENERATOR_KEYS = {
    "blacklist": "leave these operators out of the list",
    "whitelist": "list these operators under 'full_codegen'",
    "additional_ops": "list these operators under 'supported'",
}
#: Keys of torchgen's early (2022) `non_native` entries, since replaced by node properties.
OLD_NON_NATIVE_KEYS = {
    "cache_shape": "write 'properties: [ShapeCompute]' for 'cache_shape: false'; leave it "
    "out for 'cache_shape: true', a non-native node's default being ShapeCache",
}
#: Keys whose value torchgen requires to be a boolean.
BOOLEAN_KEYS = ("use_out_as_primary", "device_guard")
TOP_LEVEL_KEYS = frozenset({"backend", "cpp_namespace", "non_native", *OP_SECTIONS, *IGNORED_KEYS})


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
    #: Warnings about the file that do not stop generation (ignored keys, skipped ops).
    notices: tuple[Diagnostic, ...] = ()

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
