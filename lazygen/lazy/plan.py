"""`BackendPlan`: every node class, kernel and hand-written piece a backend needs.

Built from a validated `BackendOpList` and the `Catalogue` by pure functions; the one
question that needs the running torch (does an op have a usable meta kernel?) arrives as
a predicate, so this module never imports torch.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from lazygen.diagnostics import Diagnostic, Location
from lazygen.lazy.arguments import ArgKind, UnsupportedArgument
from lazygen.lazy.defaults import UnsupportedDefault
from lazygen.lazy.ir_schema import (
    NATIVE_DEFAULTS,
    NON_NATIVE_DEFAULTS,
    LazyIrSchema,
    resolve_properties,
    snake_name,
)
from lazygen.lazy.kernel_plan import Problems, check_returns, kernel_arguments, kernel_plan, param
from lazygen.lazy.plan_model import (
    BackendPlan,
    HandWritten,
    KernelPlan,
    Param,
    ShapeFunction,
)
from lazygen.model.native_function import Catalogue, NativeFunction
from lazygen.model.op_list import BackendOpList
from lazygen.model.schema import OperatorName


class Facts(Protocol):
    """What the planner needs to know about the installed torch (see `lazygen.lazy.meta`)."""

    def has_meta(self, f: NativeFunction) -> bool: ...

    def has_builtin(self, kind: str, argument_types: tuple[str, ...]) -> bool: ...

    def registered(self, f: NativeFunction) -> str | None: ...

    def normalised(self, f: NativeFunction) -> str: ...


_OTHER_TORCH_HINT = (
    "this native_functions.yaml seems to come from another torch version: omit "
    "--native-functions to use the installed torch's copy, or install the matching torch"
)
_SHAPE_PROPERTY = {"compute": "ShapeCompute", "cache": "ShapeCache"}
_UNSUPPORTED_HINT = "move the op to 'supported' and write its kernel by hand"


def _check_running_torch(
    ops: BackendOpList,
    catalogue: Catalogue,
    facts: Facts,
    problems: list[Diagnostic],
    warnings: list[Diagnostic],
    skip_unknown: bool,
) -> set[OperatorName]:
    """Ops the running torch lacks (errors, or one warning with `skip_unknown`) or declares
    differently (warnings).

    Both are reported at the operator's line in native_functions.yaml; the generated
    kernels follow that file, so a differing schema is usable but worth knowing about.
    """
    missing: dict[OperatorName, Location] = {}
    for _, entry in ops.entries():
        f = catalogue[entry.name]
        registered = facts.registered(f)
        if registered is None:
            if f.name not in missing and not skip_unknown:
                problems.append(
                    Diagnostic(
                        f.location,
                        f"{f.name} is not an operator of the running torch",
                        _OTHER_TORCH_HINT + "; or pass --skip-unknown-ops",
                    )
                )
            missing.setdefault(f.name, entry.location)
        elif registered != facts.normalised(f):
            warnings.append(
                Diagnostic(f.location, f"{f.name} differs from the running torch's {registered}")
            )
    if missing and skip_unknown:
        names = ", ".join(f"{name} (line {where.line})" for name, where in missing.items())
        warnings.append(
            Diagnostic(
                Location(ops.path),
                f"skipped {len(missing)} operator(s) the running torch does not have: {names}",
                "--skip-unknown-ops is on; remove them once no torch you build for has them",
            )
        )
    return set(missing)


def build_plan(
    ops: BackendOpList, catalogue: Catalogue, facts: Facts, *, skip_unknown: bool = False
) -> tuple[BackendPlan, list[Diagnostic], list[Diagnostic]]:
    """Plan the backend; returns (plan, errors, warnings). The plan omits ops in error.

    `skip_unknown`: ops the running torch lacks are left out with one warning.
    The steps: check the op list against the running torch, plan the native nodes and
    kernels, then the non-native nodes, check names, and assemble the plan with the
    hand-written pieces it needs.
    """
    problems: list[Diagnostic] = []
    warnings: list[Diagnostic] = []
    foreign = _check_running_torch(ops, catalogue, facts, problems, warnings, skip_unknown)
    nodes, kernels = _native_nodes_and_kernels(ops, catalogue, facts, foreign, problems, warnings)
    locations: dict[str, Location] = {str(e.name): e.location for _, e in ops.entries()}
    non_native, why_hand_lowered = _non_native_nodes(ops, facts, locations, problems)
    _check_names(nodes + non_native, ops, problems)
    warnings += _unlowerable(nodes, facts, locations, ops)
    nodes.sort(key=lambda n: n.op_name)
    non_native.sort(key=lambda n: n.op_name)
    plan = BackendPlan(
        backend=ops.backend,
        nodes=tuple(nodes),
        non_native=tuple(non_native),
        kernels=tuple(sorted(kernels, key=lambda k: k.op_name)),
        supported=_kernels_by_hand(ops.supported, catalogue, foreign),
        autograd=_kernels_by_hand(ops.autograd, catalogue, foreign),
        shape_functions=tuple(_dedupe(_shape_functions(kernels, locations, ops))),
        meta_ops=tuple(sorted({str(k.shape_op) for k in kernels if k.meta})),
        **_hand_written_pieces(nodes + non_native, locations, why_hand_lowered),
    )
    return plan, problems, warnings


def _native_nodes_and_kernels(
    ops: BackendOpList,
    catalogue: Catalogue,
    facts: Facts,
    foreign: set[OperatorName],
    problems: list[Diagnostic],
    warnings: list[Diagnostic],
) -> tuple[list[LazyIrSchema], list[KernelPlan]]:
    """The IR nodes of `ir_gen` and `full_codegen` ops (one per op name, in op list order)
    and the kernels of `full_codegen`; unsupported ops are reported and left out, and so
    are views, with a warning (torchgen generates them; see `_view_left_out`)."""
    symint = ops.symint_names
    nodes: dict[str, LazyIrSchema] = {}
    kernels: list[KernelPlan] = []

    def node_for(f: NativeFunction) -> LazyIrSchema:
        schema = LazyIrSchema(f.func, NATIVE_DEFAULTS, symint=f.name in symint)
        schema.arguments  # noqa: B018 - classify now, so unsupported types are reported here
        nodes.setdefault(schema.op_name, schema)
        return schema

    for entry in ops.ir_gen:
        f = catalogue[entry.name]
        if f.name in foreign:
            continue
        try:
            check_returns(f)
            node_for(f)
        except (UnsupportedArgument, Problems) as exc:
            problems.append(Diagnostic(entry.location, f"{entry.name}: {exc}", _UNSUPPORTED_HINT))
    for entry in ops.full_codegen:
        f = catalogue[entry.name]
        if f.name in foreign:
            continue
        if f.is_view_op:
            warnings.append(_view_left_out(entry.name, entry.location, catalogue))
            continue
        try:
            kernels.append(kernel_plan(f, catalogue, node_for, facts.has_meta))
        except (UnsupportedArgument, UnsupportedDefault, Problems) as exc:
            problems.append(Diagnostic(entry.location, f"{entry.name}: {exc}", _UNSUPPORTED_HINT))
    return list(nodes.values()), kernels


def _view_left_out(name: OperatorName, where: Location, catalogue: Catalogue) -> Diagnostic:
    """A view in `full_codegen`: torchgen generates its kernel (torch-mlir's generated list
    has `alias`, `view_as_real`), but lazygen functionalizes views, so the backend only ever
    sees their `_copy` variants, and a kernel returning a new tensor where the view aliases
    its input would be wrong were it reached: left out, not refused."""
    copy = OperatorName(f"{name.name}_copy", name.overload)
    instead = f"list {copy} instead" if copy in catalogue else "remove it from the list"
    return Diagnostic(
        where,
        f"{name} is a view: left out, since lazygen functionalizes views and the backend "
        "only sees their _copy variants",
        instead,
    )


def _non_native_nodes(
    ops: BackendOpList, facts: Facts, locations: dict[str, Location], problems: list[Diagnostic]
) -> tuple[list[LazyIrSchema], dict[str, str]]:
    """The `non_native` nodes (in op list order), each with a generated lowering when its opkind is
    a builtin op, and why the others are lowered by hand; records their locations."""
    non_native: list[LazyIrSchema] = []
    why_hand_lowered: dict[str, str] = {}
    for item in ops.non_native:
        props = resolve_properties(NON_NATIVE_DEFAULTS, item.properties)
        schema = LazyIrSchema(item.func, props, symint=True, opkind=item.opkind, native=False)
        try:
            schema.arguments  # noqa: B018
        except UnsupportedArgument as exc:
            problems.append(
                Diagnostic(
                    item.location,
                    f"{item.func.name}: {exc}",
                    "use only argument types the IR supports in non_native schemas",
                )
            )
            continue
        locations[schema.op_name] = item.location
        lowerable = _lowerable(schema, facts)
        if "Lower" in item.properties and not lowerable:
            problems.append(
                Diagnostic(
                    item.location,
                    f"{item.func.name} asks for a generated lowering (Lower), but "
                    f"{_no_builtin(schema)}",
                    f"drop 'Lower' and write lower_{schema.snake_name}(node, ctx) in the "
                    "hand-written lowerings, or set opkind to a TorchScript operator",
                )
            )
            continue
        if "LowerDeclOnly" not in item.properties and lowerable:
            schema = replace(schema, properties=resolve_properties(props, frozenset({"Lower"})))
        elif "LowerDeclOnly" not in item.properties:
            why_hand_lowered[schema.op_name] = _no_builtin(schema)
        non_native.append(schema)
    return non_native, why_hand_lowered


def _unlowerable(
    nodes: list[LazyIrSchema], facts: Facts, locations: dict[str, Location], ops: BackendOpList
) -> list[Diagnostic]:
    """A warning for each native node whose generated lowering names no builtin op."""
    return [
        Diagnostic(
            locations.get(n.op_name, Location(ops.path)),
            f"{n.op_name}: {_no_builtin(n)}; its generated lowering will fail when traced",
            "move the op to ir_gen + supported and lower it by hand",
        )
        for n in nodes
        if not _lowerable(n, facts)
    ]


def _shape_functions(
    kernels: list[KernelPlan], locations: dict[str, Location], ops: BackendOpList
) -> list[ShapeFunction]:
    """The hand-written shape functions of kernels whose op has no usable meta kernel."""
    return [
        ShapeFunction(
            k.shape_function,
            str(k.shape_op),
            k.params,
            locations.get(str(k.function.name), Location(ops.path)),
        )
        for k in kernels
        if not k.meta
    ]


def _hand_written_pieces(
    nodes: list[LazyIrSchema], locations: dict[str, Location], why_hand_lowered: dict[str, str]
) -> dict[str, tuple[HandWritten, ...]]:
    """The node-level hand-written functions the plan asks for: lowerings, reuse checks,
    creators and node shape functions (`BackendPlan` fields of those names)."""

    def hand(
        n: LazyIrSchema, prefix: str, params: tuple[str, ...], reason: str = ""
    ) -> HandWritten:
        where = locations.get(n.op_name)
        return HandWritten(f"{prefix}_{n.snake_name}", n.op_name, where, params, None, reason)

    return {
        "lowerings": tuple(
            hand(n, "lower", ("node", "ctx"), why_hand_lowered.get(n.op_name, ""))
            for n in nodes
            if n.lowering_hand_written
        ),
        "reuse_checks": tuple(
            hand(n, "can_be_reused", ("node", "operands", "attrs"))
            for n in nodes
            if n.reuse == "hand_written"
        ),
        "creators": tuple(
            hand(n, "create", ("cls", "operands", "attrs", "shapes"))
            for n in nodes
            if n.create == "hand_written"
        ),
        "node_shape_functions": tuple(
            hand(
                n,
                "compute_shape",
                tuple(a.ident for a in (*n.operands, *n.attributes)),
                f"{_SHAPE_PROPERTY[n.shape_mode]} on {n.op_name}: a node built without "
                "shapes computes them with it",
            )
            for n in nodes
            if n.shape_mode != "precompute"
        ),
    }


def _kernels_by_hand(entries, catalogue: Catalogue, foreign: set[OperatorName]):
    """Hand-written kernels, each with the schema parameters the dispatcher calls it with."""
    kernels = []
    for e in entries:
        if e.name in foreign:
            continue
        try:
            params = tuple(param(a) for a in kernel_arguments(catalogue[e.name]))
        except UnsupportedDefault:
            params = None  # a default lazygen cannot spell: the signature goes unchecked
        kernels.append(HandWritten(snake_name(e.name), str(e.name), e.location, None, params))
    return tuple(sorted(kernels))


def _no_builtin(node: LazyIrSchema) -> str:
    if "::" not in node.op_kind:
        return f"TorchScript has no builtin '{node.op_kind}' (it has no namespace)"
    return f"TorchScript has no {node.op_kind} taking these arguments"


def _lowerable(node: LazyIrSchema, facts: Facts) -> bool:
    """A non-`ltc_` node whose TorchScript builtin takes arguments like its schema's."""
    if node.op_kind.startswith("ltc_"):
        return False
    return facts.has_builtin(node.op_kind, tuple(str(a.type) for a in node.func.arguments.all))


def _dedupe(items: list[ShapeFunction]) -> list[ShapeFunction]:
    seen: dict[str, ShapeFunction] = {}
    for item in items:
        seen.setdefault(item.name, item)
    return sorted(seen.values(), key=lambda s: s.name)


def _check_names(nodes: list[LazyIrSchema], ops: BackendOpList, problems: list[Diagnostic]) -> None:
    """One IR class per name: two operators mapping to one class, or a non-native operator
    named as a native one the list generates a node for (torchgen's C++ would define the
    class twice; here one would silently replace the other in `NODE_CLASSES`)."""
    seen: dict[str, LazyIrSchema] = {}
    non_native = {str(e.func.name): e.location for e in ops.non_native}
    for n in nodes:
        first = seen.setdefault(n.node_name, n)
        if first is n:
            continue
        if first.op_name != n.op_name:
            problems.append(
                Diagnostic(
                    Location(ops.path),
                    f"{n.op_name} and {first.op_name} both map to IR class {n.node_name}",
                    "drop one of them from the op list",
                )
            )
        else:
            problems.append(
                Diagnostic(
                    non_native.get(n.op_name, Location(ops.path)),
                    f"non_native {n.op_name} has the name of an operator this list generates "
                    f"a node for (full_codegen or ir_gen): both would be IR class {n.node_name}",
                    "rename the non_native entry",
                )
            )


__all__ = [
    "ArgKind",
    "BackendPlan",
    "HandWritten",
    "KernelPlan",
    "Param",
    "ShapeFunction",
    "build_plan",
]
