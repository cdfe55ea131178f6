"""One typed, frozen model per template (what the template receives as ``model``); each
names the template that renders it.

Models are built from the `BackendPlan` by `build_models` (called "models", never
"contexts": in lazygen a context is the runtime's ``LoweringContext``); everything a template
prints is decided here or in `lazygen.lazy`, so templates only lay text out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

from lazygen.lazy.ir_schema import LazyIrSchema
from lazygen.lazy.plan import BackendPlan, KernelPlan
from lazygen.render.views import KernelView, NodeView, aten_ref, kernel_view


@dataclass(frozen=True, slots=True)
class Header:
    """The `@generated` banner: template name and backend, never paths or times."""

    template: str
    backend: str


@dataclass(frozen=True, slots=True, order=True)
class Import:
    """`from <module> import <name> [as <alias>]`; `deferred`: a hand-written module of a
    backend generated with --defer-hand-written, `<alias or name> =
    deferred_module("<module>.<name>")` (`lazygen.runtime.deferred`: missing pieces are
    stubs, so the backend imports without them)."""

    module: str
    name: str
    alias: str | None = None
    deferred: bool = False

    @property
    def bound(self) -> str:
        """The name the import binds."""
        return self.alias or self.name


DEFERRED_MODULE = Import("lazygen.runtime.deferred", "deferred_module")


def imports(*items: Import | None) -> tuple[Import, ...]:
    """Absolute imports, sorted as isort/ruff would (by module, then name); deferred
    modules last, after the import of `deferred_module` they need."""
    present = [i for i in items if i is not None]
    if any(i.deferred for i in present):
        present.append(DEFERRED_MODULE)
    return tuple(sorted(set(present), key=lambda i: (i.deferred, i.module, i.name)))


@dataclass(frozen=True, slots=True)
class IrModel:
    template: ClassVar[str] = "ir.py.jinja"
    header: Header
    imports: tuple[Import, ...]
    nodes: tuple[NodeView, ...]


@dataclass(frozen=True, slots=True)
class NonNativeIrModel(IrModel):
    """The same view as ``IrModel``: non-native nodes are IR classes too."""

    template: ClassVar[str] = "non_native_ir.py.jinja"


@dataclass(frozen=True, slots=True)
class KernelsModel:
    template: ClassVar[str] = "kernels.py.jinja"
    header: Header
    imports: tuple[Import, ...]
    kernels: tuple[KernelView, ...]


@dataclass(frozen=True, slots=True)
class ShapeInferenceModel:
    template: ClassVar[str] = "shape_inference.py.jinja"
    header: Header
    shape_functions: tuple  # tuple[ShapeFunction, ...]
    meta_ops: tuple[str, ...]
    hand_written: str


@dataclass(frozen=True, slots=True)
class RegistrationEntry:
    overload: str  # `aten.add.Tensor`, `aten.abs.default`, `getattr(aten.random, "from")`
    module: str  # the module alias holding the function
    function: str
    #: The hand-written piece the kernel calls (`shape_functions.compute_shape_x`), in a
    #: deferred backend's registration: `requires(kernel, piece)`, left out while missing.
    needs: str | None = None


@dataclass(frozen=True, slots=True)
class RegistrationModel:
    template: ClassVar[str] = "registration.py.jinja"
    header: Header
    imports: tuple[Import, ...]
    kernels: tuple[RegistrationEntry, ...]
    autograd: tuple[RegistrationEntry, ...]
    node_classes: tuple[tuple[str, str], ...]  # (op_name, "module.Class")
    #: (LTC's counter name, lazygen's) for symint kernels: LTC counts ``lazy::view_copy``
    #: as ``lazy::view_copy_symint`` (its kernel's C++ name); migrating users read those.
    counter_aliases: tuple[tuple[str, str], ...]
    #: Generated with --defer-hand-written: the tables leave out kernels not written yet
    #: (`present(...)`), whose ops then run through the eager fallback.
    deferred: bool


@dataclass(frozen=True, slots=True)
class InitModel:
    template: ClassVar[str] = "__init__.py.jinja"
    header: Header
    modules: tuple[str, ...]


TemplateModel = (
    IrModel | NonNativeIrModel | KernelsModel | ShapeInferenceModel | RegistrationModel | InitModel
)


@dataclass(frozen=True, slots=True)
class ReleasesInitModel:
    """The ``__init__.py`` of an output laid out per torch release (``torch2_13/``, ...): it
    makes the package the installed torch's tree. Constant text, so that every release's
    environment writes the same file."""

    template: ClassVar[str] = "releases_init.py.jinja"


@dataclass(frozen=True, slots=True)
class ProvenanceModel:
    """``provenance.py`` of one release's tree: the torch it was generated with, and the
    digest of each other tree it was generated beside (the primary release's), so that an
    environment without this torch still sees when the tree fell behind."""

    template: ClassVar[str] = "provenance.py.jinja"
    torch: str
    beside: tuple[tuple[str, str], ...]  # (tree folder, digest of its files)


_overload = aten_ref


def _hand_lowered(nodes: tuple[LazyIrSchema, ...]) -> bool:
    """Some node method delegates to the hand-written lowerings module."""
    return any(
        n.lowering_hand_written or n.reuse == "hand_written" or n.create == "hand_written"
        for n in nodes
    )


def _node_imports(
    nodes: tuple[LazyIrSchema, ...], hand: Import | None, shapes: Import | None
) -> tuple[Import, ...]:
    """`Node`, `make_node` for `CreateFn` nodes, the hand-written lowerings and shape
    functions if used."""
    creates = any(n.create == "generated" for n in nodes)
    make_node = Import("lazygen.runtime.kernel_support", "make_node") if creates else None
    call = Import("lazygen.runtime.ir", "call_shape_function") if shapes else None
    return imports(Import("lazygen.runtime.ir", "Node"), call, make_node, hand, shapes)


def _computes_shapes(nodes: tuple[LazyIrSchema, ...]) -> bool:
    return any(n.shape_mode != "precompute" for n in nodes)


def _symint_counter_alias(op_name: str) -> tuple[str, str]:
    """``view_copy`` -> ("lazy::view_copy_symint", "lazy::view_copy")."""
    name, dot, overload = op_name.partition(".")
    return f"lazy::{name}_symint{dot}{overload}", f"lazy::{op_name}"


def build_models(
    plan: BackendPlan, hand_written: str, *, deferred: bool = False
) -> dict[str, TemplateModel]:
    """Output file name -> the model of the template that produces it. `deferred`: the
    hand-written package may lack pieces (--defer-hand-written), so its modules are reached
    through `lazygen.runtime.deferred` and the registration skips what is missing."""
    hand = functools.partial(_hand_import, hand_written, deferred)
    models: dict[str, TemplateModel] = {
        "ir.py": _ir_model(IrModel, plan, plan.nodes, hand),
        "non_native_ir.py": _ir_model(NonNativeIrModel, plan, plan.non_native, hand),
        "kernels.py": KernelsModel(
            Header(KernelsModel.template, plan.backend),
            imports(
                Import("lazygen.runtime", "kernel_support", "rt"),
                Import("lazygen.runtime.kernel_support", "LazyTensor"),
                hand("shape_functions", None, any(not k.meta for k in plan.kernels)),
            ),
            tuple(kernel_view(k) for k in plan.kernels),
        ),
        "shape_inference.py": ShapeInferenceModel(
            Header(ShapeInferenceModel.template, plan.backend),
            plan.shape_functions,
            plan.meta_ops,
            hand_written,
        ),
        "registration.py": _registration_model(plan, hand, deferred),
    }
    models["__init__.py"] = InitModel(
        Header(InitModel.template, plan.backend), tuple(sorted(n[:-3] for n in models))
    )
    return models


def _hand_import(
    hand_written: str, deferred: bool, module: str, alias: str | None, needed: bool
) -> Import | None:
    """The import of a module of the hand-written package, when ``needed``."""
    return Import(hand_written, module, alias, deferred) if needed else None


def _ir_model(cls, plan: BackendPlan, nodes: tuple[LazyIrSchema, ...], hand):
    """The model of ``ir.py`` or ``non_native_ir.py`` (``cls``) for ``nodes``."""
    return cls(
        Header(cls.template, plan.backend),
        _node_imports(
            nodes,
            hand("lowerings", "hand_written", _hand_lowered(nodes)),
            hand("shape_functions", "hand_shapes", _computes_shapes(nodes)),
        ),
        tuple(NodeView(n) for n in nodes),
    )


def _registration_model(plan: BackendPlan, hand, deferred: bool) -> RegistrationModel:
    """The registration: every kernel, autograd kernel and node class by overload."""

    def needs(k: KernelPlan) -> str | None:
        return f"shape_functions.{k.shape_function}" if deferred and not k.meta else None

    kernels = (
        *(
            RegistrationEntry(_overload(k.op_name), "kernels", k.name, needs(k))
            for k in plan.kernels
        ),
        *(RegistrationEntry(_overload(s.op_name), "hand_written", s.name) for s in plan.supported),
    )
    autograd = (RegistrationEntry(_overload(a.op_name), "autograd", a.name) for a in plan.autograd)
    node_classes = [(n.op_name, f"ir.{n.node_name}") for n in plan.nodes]
    node_classes += [(n.op_name, f"non_native_ir.{n.node_name}") for n in plan.non_native]
    return RegistrationModel(
        Header(RegistrationModel.template, plan.backend),
        imports(
            hand("autograd", None, bool(plan.autograd)),
            hand("kernels", "hand_written", bool(plan.supported)),
            hand("shape_functions", None, any(e.needs for e in kernels)),
            Import("lazygen.runtime.deferred", "present") if deferred else None,
            (
                Import("lazygen.runtime.deferred", "requires")
                if any(e.needs for e in kernels)
                else None
            ),
        ),
        tuple(sorted(kernels, key=lambda e: e.overload)),
        tuple(sorted(autograd, key=lambda e: e.overload)),
        tuple(sorted(node_classes)),
        tuple(sorted(_symint_counter_alias(k.op_name) for k in plan.kernels if k.node.symint)),
        deferred,
    )
