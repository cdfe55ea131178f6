"""Formulas of backward ops that torch has none for, derived by autograd from their forward's.

``torch._decomp`` holds formulas of ``upsample_bilinear2d``, ``replication_pad2d``,
``grid_sampler_2d``... but not of their backward ops (``upsample_bilinear2d_backward``...),
which eager autograd runs as kernels. The gradient of a formula is autograd's to compute:
the formula of ``F_backward`` is the vector-Jacobian product of ``F``'s formula, traced by
``make_fx`` (``decomposed.Decompositions.trace``) into the table's ops like any other
formula, so a backend that lowers ``F`` through torch's formula lowers its backward too.

How a backward's arguments map to its forward's, read from the two schemas (an op whose
schemas do not fit is not derived, and stays refused):

* the backward's first argument is the gradient of the forward's first output;
* every other forward argument is the backward's argument of the same name, or its schema
  default; a forward tensor the backward gives only as sizes (``input_size`` for ``self``)
  is one the gradient does not depend on the values of (torch's kernel is given no more),
  so zeros of those sizes stand for it;
* the backward's results are the gradients of the forward's first tensor arguments, one
  each (``torch.func.vjp``); one the forward does not depend on is zeros, as is one
  ``output_mask`` asks not for (torch leaves it undefined, and autograd reads only those
  it asked for).

A derived formula differentiates, so it must be called *above* autograd: it is the traced
function itself, never an entry of ``make_fx``'s decomposition table (inside that table's
dispatch, autograd is off and every gradient would be missing), and it is traced by
``above_autograd``: the lazy device asks whether it lowers from inside its own dispatch
(below autograd, grad mode off, autograd's keys excluded), where no guard of the caller's
can be trusted to undo what an outer dispatch set. It is traced functionalized: a forward
formula may write in place into tensors it made, which ``vjp`` and the op table take as
pure ops. A derivation whose graph draws random numbers is refused
(``decomposed._draws``): it would draw anew what the forward drew (a dropout mask).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

import torch

from ...op_registry import base_name, forward_of

_T = TypeVar("_T")

#: How a forward argument is made: the backward's argument of its name, zeros of the sizes
#: the backward gives for it, or its schema default.
_GIVEN, _SIZED, _DEFAULT = "given", "sized", "schema default"

#: A forward argument the backward gives only as sizes: the backward argument naming them.
_SIZES_OF = MappingProxyType({"self": "input_size", "input": "input_size"})


def _is_tensor(argument) -> bool:
    return isinstance(argument.type, torch.TensorType)


class DerivedBackwards:
    """``derived[backward]``: the formula of a backward op derived from its forward's formula
    in ``formulas`` (torch's decompositions, by overload), or absent."""

    def __init__(self, formulas: Mapping) -> None:
        self.formulas = formulas
        #: Backward overload -> derived formula (or None: its schemas do not fit).
        self.made: dict[Any, Callable | None] = {}

    def __contains__(self, overload) -> bool:
        return self.get(overload) is not None

    def __getitem__(self, overload) -> Callable:
        found = self.get(overload)
        if found is None:
            raise KeyError(overload)
        return found

    def get(self, overload) -> Callable | None:
        if overload not in self.made:
            self.made[overload] = _derive(overload, self.formulas)
        return self.made[overload]


def _derive(backward, formulas: Mapping) -> Callable | None:
    if not isinstance(backward, torch._ops.OpOverload) or backward._schema.is_mutable:
        return None
    forward = forward_of(backward)
    if forward is None or forward not in formulas:
        return None
    plan = _plan(forward._schema, backward._schema)
    if plan is None:
        return None
    return _formula(formulas[forward], backward._schema, base_name(backward), *plan)


def _plan(forward, backward):
    """How each forward argument is made from the backward's, and how many gradients; None
    when the schemas do not fit the rule."""
    arguments = backward.arguments
    if not arguments or not _is_tensor(arguments[0]) or not arguments[0].name.startswith("grad"):
        return None
    returns = backward.returns
    wrt = [a.name for a in forward.arguments if _is_tensor(a)][: len(returns)]
    if not returns or len(wrt) < len(returns) or not all(_is_tensor(r) for r in returns):
        return None
    given = {a.name for a in arguments[1:]}
    sources = []  # per forward argument: (name, kwarg_only, source, is_wrt)
    for a in forward.arguments:
        if a.name in given:
            source = (_GIVEN, a.name)
        elif a.name in wrt and _SIZES_OF.get(a.name) in given:
            source = (_SIZED, _SIZES_OF[a.name])
        elif a.has_default_value():
            source = (_DEFAULT, a.default_value)
        else:
            return None
        sources.append((a.name, a.kwarg_only, source, a.name in wrt))
    return sources, len(returns)


def _formula(forward_formula: Callable, schema, name: str, sources, count: int) -> Callable:
    names = [a.name for a in schema.arguments]
    defaults = {a.name: a.default_value for a in schema.arguments if a.has_default_value()}

    def derived(*args, **kwargs):
        bound = dict(defaults)  # a call may leave out trailing defaulted arguments
        bound.update(zip(names, args, strict=False))
        bound.update(kwargs)
        grad = bound[names[0]]
        made, wrt = {}, []
        for name, _, (kind, what), is_wrt in sources:
            if kind is _GIVEN:
                made[name] = bound[what]
            elif kind is _SIZED:
                made[name] = grad.new_zeros(bound[what])
            else:
                made[name] = what
            if is_wrt:
                wrt.append(name)

        def first_output(*primals):
            made.update(zip(wrt, primals, strict=True))
            positional = [made[n] for n, kwarg_only, _, _ in sources if not kwarg_only]
            keywords = {
                n: made[n] for n, kw, (kind, _), _ in sources if kw and kind is not _DEFAULT
            }
            out = forward_formula(*positional, **keywords)
            return out[0] if isinstance(out, (tuple, list)) else out

        _, pullback = torch.func.vjp(first_output, *(made[n] for n in wrt))
        grads = pullback(grad)
        return grads[0] if count == 1 else tuple(grads)

    derived.__name__ = f"derived_{name}"
    return derived


def above_autograd(fn: Callable[[], _T]) -> _T:
    """``fn()`` run in a fresh thread: torch's dispatch state (excluded keys, grad mode,
    dispatch and function modes) is per thread, and a new thread's is a top-level caller's.
    The caller waits; ``fn``'s exception is raised here."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            outcome.append((False, error))

    thread = threading.Thread(target=run, name="lazygen-derived-backward-trace")
    thread.start()
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value
