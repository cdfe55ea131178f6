"""Compare a hand-written function's signature with what generated code will call it with.

Three contracts, each stated as what goes wrong otherwise:

* a kernel (`supported`, `autograd`) is called by the dispatcher with the schema's
  positional arguments by position and its keyword-only arguments by name, and arguments
  left at their default may be omitted; so its parameters must take the schema's names in
  the schema's order and have a default wherever the schema has one (`*args`/`**kwargs`
  absorb what they cover);
* a shape function is declared exactly (names, kinds, defaults) in the generated
  `shape_inference.py`, so it must match that declaration;
* a node method (`lower_<op>(node, ctx)`, `can_be_reused_<op>`, `create_<op>`) is called
  with fixed parameter names.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from lazygen.diagnostics import Location
from lazygen.lazy.plan import Param, ShapeFunction

_P = inspect.Parameter
_KIND = {False: _P.POSITIONAL_OR_KEYWORD, True: _P.KEYWORD_ONLY}


def signature_of(fn: Callable) -> inspect.Signature | None:
    """`inspect.signature(fn)`, or None when Python cannot tell (some C functions)."""
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def source_location(fn: object) -> Location | None:
    """Where `fn` is defined (its file and `def` line), for messages about it."""
    target = inspect.unwrap(fn) if callable(fn) else fn
    try:
        file = inspect.getsourcefile(target)  # type: ignore[arg-type]
        _, line = inspect.getsourcelines(target)  # type: ignore[arg-type]
    except (TypeError, OSError):
        return None
    return Location(file, line) if file else None


def call_text(params: tuple[Param, ...]) -> str:
    """`(self, other, *, alpha=1)`: the parameter list a kernel or declaration shows."""
    parts: list[str] = []
    star = False
    for p in params:
        if p.keyword_only and not star:
            parts.append("*")
            star = True
        parts.append(p.name if p.default is None else f"{p.name}={p.default}")
    return f"({', '.join(parts)})"


def kernel_mismatch(actual: inspect.Signature, params: tuple[Param, ...]) -> str | None:
    """Why the dispatcher's call of a kernel with schema `params` would fail, or None."""
    given = list(actual.parameters.values())
    var_positional = any(p.kind is _P.VAR_POSITIONAL for p in given)
    var_keyword = any(p.kind is _P.VAR_KEYWORD for p in given)
    by_position = [p for p in given if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name: p for p in given if p.kind in (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY)}
    used: set[str] = set()
    positional = [p for p in params if not p.keyword_only]
    for index, want in enumerate(positional):
        if index >= len(by_position):
            if var_positional:
                break
            return f"takes {len(by_position)} positional parameter(s), the schema has {len(positional)}"
        have = by_position[index]
        if have.kind is _P.POSITIONAL_OR_KEYWORD and have.name != want.name:
            return (
                f"parameter {index + 1} is named {have.name!r}, the schema calls it {want.name!r}"
            )
        if want.default is not None and have.default is _P.empty:
            return f"{have.name!r} needs a default: the schema's is {want.default}"
        used.add(have.name)
    for want in (p for p in params if p.keyword_only):
        have = by_name.get(want.name)
        if have is None:
            if var_keyword:
                continue
            return f"has no parameter {want.name!r} (keyword-only in the schema)"
        if want.default is not None and have.default is _P.empty:
            return f"{want.name!r} needs a default: the schema's is {want.default}"
        used.add(have.name)
    for have in given:
        if have.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD) or have.name in used:
            continue
        if have.default is _P.empty:
            return f"has a parameter {have.name!r} the schema does not pass"
    return None


def names_mismatch(actual: inspect.Signature, names: tuple[str, ...]) -> str | None:
    """Why a node method taking exactly `names` does not, or None."""
    found = tuple(actual.parameters)
    if found == names:
        return None
    return f"takes ({', '.join(found)}), it must take ({', '.join(names)})"


def expected_signature(params: tuple[Param, ...]) -> inspect.Signature:
    """The declared signature of a shape function, defaults evaluated as Python values."""
    import torch

    namespace = {"torch": torch}
    return inspect.Signature(
        [
            _P(
                p.name,
                _KIND[p.keyword_only],
                default=_P.empty if p.default is None else eval(p.default, namespace),
            )
            for p in params
        ]
    )


def declaration(fn: ShapeFunction) -> str:
    """`def compute_shape_x(self, *, dim=0) -> list[Shape]:` for messages."""
    return f"def {fn.name}{call_text(fn.params)} -> list[Shape]:"


def same_declaration(actual: inspect.Signature, expected: inspect.Signature) -> bool:
    """Names, kinds and defaults all equal (a shape function matches its declaration)."""
    a, e = list(actual.parameters.values()), list(expected.parameters.values())
    if len(a) != len(e):
        return False
    for x, y in zip(a, e, strict=True):
        if x.name != y.name or x.kind != y.kind:
            return False
        if (x.default is _P.empty) != (y.default is _P.empty):
            return False
        if x.default is not _P.empty and not _equal(x.default, y.default):
            return False
    return True


def _equal(a: object, b: object) -> bool:
    if isinstance(a, list):
        a = tuple(a)
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - exotic defaults compare unequal
        return False
