"""Entries of native_functions.yaml and the catalogue that indexes them.

A `NativeFunction` is one yaml entry (or one entry derived from another's `autogen:`);
`Catalogue` looks operators up by name and groups functional / in-place / out variants.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from lazygen.diagnostics import Location
from lazygen.model.schema import FunctionSchema, OperatorName, SchemaKind

#: Dispatch keys whose kernel works for every backend (so no backend kernel is needed).
COMPOSITE_KEYS = frozenset({"CompositeImplicitAutograd", "CompositeImplicitAutogradNestedTensor"})


@dataclass(frozen=True, slots=True)
class NativeFunction:
    """One operator as native_functions.yaml declares it."""

    func: FunctionSchema
    location: Location
    variants: frozenset[str] = frozenset({"function"})
    structured: bool = False
    structured_delegate: OperatorName | None = None
    structured_inherits: str | None = None
    dispatch: tuple[tuple[str, str], ...] = ()
    autogen: tuple[OperatorName, ...] = ()
    tags: frozenset[str] = frozenset()
    python_module: str | None = None
    manual_cpp_binding: bool = False
    device_check: str | None = None
    device_guard: bool = True
    #: Derived by the codegen (`autogen:` of another entry) rather than written in yaml.
    generated: bool = False

    @property
    def name(self) -> OperatorName:
        return self.func.name

    @property
    def dispatch_keys(self) -> frozenset[str]:
        return frozenset(key for key, _ in self.dispatch)

    @property
    def has_composite_implicit_kernel(self) -> bool:
        """True when ATen decomposes the op itself, so backends never see it."""
        if not self.dispatch and not self.structured_delegate and not self.structured:
            return not self.generated
        return bool(self.dispatch_keys & COMPOSITE_KEYS)

    @property
    def is_view_op(self) -> bool:
        """Returns alias an input without writing it (`view`, `transpose`, ...)."""
        return any(
            r.annotation is not None and not r.annotation.is_write for r in self.func.returns
        )

    def kind(self) -> SchemaKind:
        return self.func.kind()


@dataclass(frozen=True, slots=True)
class VariantGroup:
    """The functional, in-place, out and mutable variants of one operator signature."""

    functional: NativeFunction | None = None
    inplace: NativeFunction | None = None
    out: NativeFunction | None = None
    mutable: NativeFunction | None = None

    def members(self) -> Iterator[NativeFunction]:
        for f in (self.functional, self.inplace, self.out, self.mutable):
            if f is not None:
                yield f


@dataclass(frozen=True)
class Catalogue:
    """All native functions of one native_functions.yaml, indexed by operator name."""

    functions: tuple[NativeFunction, ...]
    tags: frozenset[str]
    source: str
    _by_name: Mapping[OperatorName, NativeFunction] = field(init=False, repr=False)
    _by_base: Mapping[str, tuple[NativeFunction, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        by_name: dict[OperatorName, NativeFunction] = {}
        by_base: dict[str, list[NativeFunction]] = {}
        for f in self.functions:
            by_name[f.name] = f
            by_base.setdefault(f.name.name, []).append(f)
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_by_base", {k: tuple(v) for k, v in by_base.items()})

    def __len__(self) -> int:
        return len(self.functions)

    def __iter__(self) -> Iterator[NativeFunction]:
        return iter(self.functions)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def get(self, name: OperatorName) -> NativeFunction | None:
        return self._by_name.get(name)

    def __getitem__(self, name: OperatorName) -> NativeFunction:
        return self._by_name[name]

    def overloads(self, name: str) -> tuple[NativeFunction, ...]:
        """Every overload of the operator called `name` (`add` -> add.Tensor, add.Scalar, ...)."""
        return self._by_base.get(name, ())

    def names(self) -> Iterable[OperatorName]:
        return self._by_name.keys()

    @cached_property
    def _groups(self) -> dict[tuple, VariantGroup]:
        buckets: dict[tuple, dict[SchemaKind, NativeFunction]] = {}
        for f in self.functions:
            buckets.setdefault(f.func.signature(), {}).setdefault(f.kind(), f)
        return {
            sig: VariantGroup(
                functional=b.get(SchemaKind.functional),
                inplace=b.get(SchemaKind.inplace),
                out=b.get(SchemaKind.out),
                mutable=b.get(SchemaKind.mutable),
            )
            for sig, b in buckets.items()
        }

    def groups(self) -> list[VariantGroup]:
        """Group variants that share a signature, as torchgen's NativeFunctionsGroup does."""
        return list(self._groups.values())

    def group_of(self, f: NativeFunction) -> VariantGroup:
        """The variant group `f` belongs to."""
        return self._groups[f.func.signature()]
