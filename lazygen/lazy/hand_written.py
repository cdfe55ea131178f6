"""Check the hand-written pieces generated code relies on, by importing and introspecting them.

For a backend whose hand-written package is `P` (`lazygen.runtime.backends.torchscript` for the TS
backend): `supported` kernels in `P.kernels`, autograd kernels in `P.autograd`, shape
functions in `P.shape_functions` (compared with `inspect.signature`), hand-written
lowerings and reuse checks in `P.lowerings`. Missing pieces are errors that name the exact
function to write; shape functions a meta kernel made unnecessary are warnings.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from lazygen.errors import Diagnostic, Location
from lazygen.lazy.plan import BackendPlan, HandWritten, Param, ShapeFunction


@dataclass(frozen=True)
class Needs:
    """The hand-written part of a `BackendPlan` (what `check_hand_written` reads)."""

    supported: tuple[HandWritten, ...]
    autograd: tuple[HandWritten, ...]
    lowerings: tuple[HandWritten, ...]
    reuse_checks: tuple[HandWritten, ...]
    shape_functions: tuple[ShapeFunction, ...]


_KIND = {False: inspect.Parameter.POSITIONAL_OR_KEYWORD, True: inspect.Parameter.KEYWORD_ONLY}


def _import(module_name: str) -> ModuleType | None:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            return None
        raise


def expected_signature(params: tuple[Param, ...]) -> inspect.Signature:
    import torch

    namespace = {"torch": torch}
    return inspect.Signature(
        [
            inspect.Parameter(
                p.name,
                _KIND[p.keyword_only],
                default=(
                    inspect.Parameter.empty if p.default is None else eval(p.default, namespace)
                ),
            )
            for p in params
        ]
    )


def declaration(fn: ShapeFunction) -> str:
    """`def compute_shape_x(self, *, dim=0) -> list[Shape]:` for messages."""
    parts: list[str] = []
    star = False
    for p in fn.params:
        if p.keyword_only and not star:
            parts.append("*")
            star = True
        parts.append(p.name if p.default is None else f"{p.name}={p.default}")
    return f"def {fn.name}({', '.join(parts)}) -> list[Shape]:"


def _same(actual: inspect.Signature, expected: inspect.Signature) -> bool:
    a, e = list(actual.parameters.values()), list(expected.parameters.values())
    if len(a) != len(e):
        return False
    for x, y in zip(a, e, strict=True):
        if x.name != y.name or x.kind != y.kind:
            return False
        if (x.default is inspect.Parameter.empty) != (y.default is inspect.Parameter.empty):
            return False
        if x.default is not inspect.Parameter.empty and not _equal(x.default, y.default):
            return False
    return True


def _equal(a: object, b: object) -> bool:
    if isinstance(a, list):
        a = tuple(a)
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - exotic defaults compare unequal
        return False


def _where(module: str, package: str) -> str:
    spec_name = f"{package}.{module}"
    return spec_name.replace(".", "/") + ".py"


def check_hand_written(
    plan: BackendPlan | Needs, package: str
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """(errors, warnings) about the hand-written pieces of `plan` in `package`."""
    errors: list[Diagnostic] = []
    warnings: list[Diagnostic] = []
    modules = {
        name: _import(f"{package}.{name}")
        for name in ("kernels", "autograd", "shape_functions", "lowerings")
    }

    def need(module: str, items: tuple[HandWritten, ...], what: str) -> None:
        mod = modules[module]
        for item in items:
            fn = getattr(mod, item.name, None) if mod is not None else None
            where = Location(_where(module, package))
            if not callable(fn):
                errors.append(
                    Diagnostic(
                        item.location or where,
                        f"{what} {item.name} for {item.op_name} is missing",
                        f"define it in {where}",
                    )
                )
                continue
            if item.params is not None:
                names = tuple(inspect.signature(fn).parameters)
                if names != item.params:
                    errors.append(
                        Diagnostic(
                            where,
                            f"{item.name} takes ({', '.join(names)})",
                            f"it must take ({', '.join(item.params)})",
                        )
                    )

    need("kernels", plan.supported, "hand-written kernel")
    need("autograd", plan.autograd, "autograd kernel")
    need("lowerings", plan.lowerings, "hand-written lowering")
    need("lowerings", plan.reuse_checks, "hand-written reuse check")

    shapes = modules["shape_functions"]
    where = Location(_where("shape_functions", package))
    required = {s.name for s in plan.shape_functions}
    for s in plan.shape_functions:
        fn = getattr(shapes, s.name, None) if shapes is not None else None
        if not callable(fn):
            errors.append(
                Diagnostic(
                    s.location,
                    f"{s.op_name} has no usable meta kernel and no shape function",
                    f"write `{declaration(s)}` in {where}",
                )
            )
        elif not _same(inspect.signature(fn), expected_signature(s.params)):
            errors.append(
                Diagnostic(
                    where,
                    f"{s.name}{inspect.signature(fn)} does not match its declaration",
                    f"it must be `{declaration(s)}`",
                )
            )
    if shapes is not None:
        for name in sorted(vars(shapes)):
            if name.startswith("compute_shape_") and name not in required:
                warnings.append(
                    Diagnostic(
                        where,
                        f"{name} is not needed: its op uses the meta kernel or is not generated",
                    )
                )
    return errors, warnings


def package_dir(package: str) -> Path | None:
    """The directory of `package`, found without importing it (for the input hash)."""
    import importlib.util

    top, _, rest = package.partition(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)))
    return path.joinpath(*rest.split(".")) if rest else path
