"""Check the hand-written pieces generated code relies on, by importing and introspecting them.

For a backend whose hand-written package is `P` (the `--hand-written` value): `supported`
kernels in `P.kernels`, autograd kernels in `P.autograd`, shape functions in
`P.shape_functions` (also `compute_shape_<node>` of ShapeCompute/ShapeCache nodes),
hand-written lowerings, reuse checks and create functions in
`P.lowerings`. Signatures are compared with what generated code calls them with
(`lazygen.lazy.signatures`).

What users see, and why:

* a module that fails to import is reported once, at the failing file and line, with its
  own error, and the pieces it should define are not reported as missing (they may well
  be there);
* a missing piece is reported at the op list line that needs it, with the `def` to write
  and the module to write it in, named after the user's package; lazygen's own package is
  never offered as the place to edit;
* with `defer`, missing pieces are warnings (a backend under construction still
  generates); broken modules and wrong signatures stay errors.
"""

from __future__ import annotations

import importlib
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from lazygen.diagnostics import Diagnostic, Location
from lazygen.lazy.plan import BackendPlan, HandWritten, ShapeFunction
from lazygen.lazy.signatures import (
    call_text,
    declaration,
    expected_signature,
    kernel_mismatch,
    names_mismatch,
    same_declaration,
    signature_of,
    source_location,
)

#: lazygen's own TorchScript package: a hint never tells a user to edit it.
BUILTIN_PACKAGE_PREFIX = "lazygen."
MODULES = ("kernels", "autograd", "shape_functions", "lowerings")


@dataclass(frozen=True)
class Needs:
    """The hand-written part of a `BackendPlan` (what `check_hand_written` reads)."""

    supported: tuple[HandWritten, ...]
    autograd: tuple[HandWritten, ...]
    lowerings: tuple[HandWritten, ...]
    reuse_checks: tuple[HandWritten, ...]
    creators: tuple[HandWritten, ...]
    node_shape_functions: tuple[HandWritten, ...]
    shape_functions: tuple[ShapeFunction, ...]


@dataclass
class _Report:
    """Errors and warnings of one check; `missing` goes to warnings when deferred."""

    defer: bool
    errors: list[Diagnostic] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)

    def missing(self, diagnostic: Diagnostic) -> None:
        (self.warnings if self.defer else self.errors).append(diagnostic)


@dataclass(frozen=True)
class _Loaded:
    """A hand-written module: imported, absent, or broken (already reported)."""

    module: ModuleType | None
    broken: bool = False


def _import_failure(module_name: str, exc: BaseException) -> Diagnostic:
    """The failing file and line of an import, and the error it raised."""
    where: Location | None = None
    if isinstance(exc, SyntaxError) and exc.filename:
        where = Location(exc.filename, exc.lineno or 0)
    else:
        frames = [  # the user's frames: neither importlib's nor this module's
            f
            for f in traceback.extract_tb(exc.__traceback__)
            if "importlib" not in f.filename and f.filename != __file__
        ]
        if frames:
            where = Location(frames[-1].filename, frames[-1].lineno or 0)
    detail = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    return Diagnostic(
        where,
        f"cannot import hand-written module {module_name}: {type(exc).__name__}: {detail}",
        "fix that error; the pieces this module should define are checked once it imports",
    )


def _not_found(exc: ModuleNotFoundError, module_name: str) -> bool:
    """The module itself (or a parent package of it) does not exist."""
    return bool(exc.name) and (module_name == exc.name or module_name.startswith(exc.name + "."))


def _load(module_name: str, report: _Report) -> _Loaded:
    try:
        return _Loaded(importlib.import_module(module_name))
    except ModuleNotFoundError as exc:
        if _not_found(exc, module_name):
            return _Loaded(None)
        report.errors.append(_import_failure(module_name, exc))
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code may raise anything
        report.errors.append(_import_failure(module_name, exc))
    return _Loaded(None, broken=True)


def _builtin(package: str) -> bool:
    return package.startswith(BUILTIN_PACKAGE_PREFIX)


def _place(package: str, module: str) -> str:
    """Where a missing piece goes, in words that name the user's package."""
    if _builtin(package):
        return (
            f"the `{module}` module of your own package, named with --hand-written PACKAGE; "
            f"lazygen's built-in {package} has none"
        )
    return f"{package}.{module}"


def check_hand_written(
    plan: BackendPlan | Needs, package: str, *, defer: bool = False
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """(errors, warnings) about the hand-written pieces of `plan` in `package`."""
    report = _Report(defer)
    top = _load(package, report)
    if top.broken:
        return report.errors, report.warnings
    if top.module is None:
        if _needs_any(plan):
            report.missing(
                Diagnostic(
                    None,
                    f"hand-written package {package!r} cannot be found",
                    "install it or put its parent directory on PYTHONPATH, and pass its "
                    "name with --hand-written (--defer-hand-written generates without it)",
                )
            )
        return report.errors, report.warnings
    loaded = {name: _load(f"{package}.{name}", report) for name in MODULES}
    _check_functions(report, loaded, package, "kernels", plan.supported, "hand-written kernel")
    _check_functions(report, loaded, package, "autograd", plan.autograd, "autograd kernel")
    _check_functions(report, loaded, package, "lowerings", plan.lowerings, "hand-written lowering")
    _check_functions(
        report, loaded, package, "lowerings", plan.reuse_checks, "hand-written reuse check"
    )
    _check_functions(
        report, loaded, package, "lowerings", plan.creators, "hand-written create function"
    )
    _check_functions(
        report,
        loaded,
        package,
        "shape_functions",
        plan.node_shape_functions,
        "hand-written shape function",
    )
    _check_shape_functions(
        report,
        loaded["shape_functions"],
        package,
        plan.shape_functions,
        {h.name for h in plan.node_shape_functions},
    )
    return report.errors, report.warnings


def _needs_any(plan: BackendPlan | Needs) -> bool:
    return any(
        (
            plan.supported,
            plan.autograd,
            plan.lowerings,
            plan.reuse_checks,
            plan.creators,
            plan.node_shape_functions,
            plan.shape_functions,
        )
    )


def _lookup(module: ModuleType | None, name: str) -> object:
    """`module.name`, or None; a module `__getattr__` that raises counts as absent."""
    if module is None:
        return None
    try:
        return getattr(module, name, None)
    except Exception:  # noqa: BLE001 - user code may raise anything
        return None


def _check_functions(
    report: _Report,
    loaded: dict[str, _Loaded],
    package: str,
    module: str,
    items: tuple[HandWritten, ...],
    what: str,
) -> None:
    mod = loaded[module]
    if mod.broken:
        return
    for item in items:
        fn = _lookup(mod.module, item.name)
        call = call_text(item.signature) if item.signature is not None else None
        if call is None:
            call = f"({', '.join(item.params)})" if item.params is not None else "(...)"
        if not callable(fn):
            reason = f"{item.reason}; " if item.reason else ""
            report.missing(
                Diagnostic(
                    item.location,
                    f"{what} {item.name} for {item.op_name} is missing",
                    f"{reason}define `def {item.name}{call}` in {_place(package, module)}",
                )
            )
            continue
        problem = _signature_problem(fn, item)
        if problem is not None:
            report.errors.append(
                Diagnostic(
                    source_location(fn) or item.location,
                    f"{what} {item.name} for {item.op_name} {problem}",
                    f"it must be `def {item.name}{call}`",
                )
            )


def _signature_problem(fn: object, item: HandWritten) -> str | None:
    actual = signature_of(fn)  # type: ignore[arg-type]
    if actual is None:
        return None  # Python cannot read it (a C function): nothing to compare
    if item.params is not None:
        return names_mismatch(actual, item.params)
    if item.signature is not None:
        return kernel_mismatch(actual, item.signature)
    return None


def _check_shape_functions(
    report: _Report,
    mod: _Loaded,
    package: str,
    needed: tuple[ShapeFunction, ...],
    node_functions: set[str],
) -> None:
    if mod.broken:
        return
    shapes = mod.module
    for s in needed:
        fn = _lookup(shapes, s.name)
        if not callable(fn):
            report.missing(
                Diagnostic(
                    s.location,
                    f"{s.op_name} has no usable meta kernel and no shape function",
                    f"write `{declaration(s)}` in {_place(package, 'shape_functions')}",
                )
            )
            continue
        actual = signature_of(fn)
        if actual is not None and not same_declaration(actual, expected_signature(s.params)):
            report.errors.append(
                Diagnostic(
                    source_location(fn) or s.location,
                    f"{s.name}{actual} does not match its declaration",
                    f"it must be `{declaration(s)}`",
                )
            )
    if shapes is None or _builtin(package):  # lazygen's own package: not the user's to tidy
        return
    required = {s.name for s in needed} | node_functions
    for name in sorted(vars(shapes)):
        if name.startswith("compute_shape_") and name not in required:
            report.warnings.append(
                Diagnostic(
                    source_location(vars(shapes)[name]) or Location(f"{package}.shape_functions"),
                    f"{name} is not needed: its op uses the meta kernel or is not generated",
                )
            )


def package_dir(package: str) -> Path | None:
    """The directory of `package`, found without importing it (for the input hash)."""
    import importlib.util

    top, _, rest = package.partition(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)))
    return path.joinpath(*rest.split(".")) if rest else path
