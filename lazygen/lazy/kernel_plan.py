"""One generated kernel's plan (``kernel_plan``): which op it computes (the functional
form of an in-place or out= op), what it writes, its Python parameters, and whether its
shapes come from a meta kernel; schemas a lazy kernel cannot serve are refused with the
reason (``Problems``). Apart from ``plan.py``, which decides which ops get a kernel at all.
"""

from __future__ import annotations

from collections.abc import Callable

from lazygen.lazy.arguments import python_name
from lazygen.lazy.defaults import python_default
from lazygen.lazy.ir_schema import (
    LazyIrSchema,
)
from lazygen.lazy.plan_model import (
    KernelPlan,
    Param,
)
from lazygen.model.native_function import Catalogue, NativeFunction
from lazygen.model.schema import SchemaKind
from lazygen.model.types import BaseTy, ListType, OptionalType

#: Ops whose meta kernel cannot know the output shape (it depends on tensor values).
DYNAMIC_SHAPE_TAG = "dynamic_output_shape"


#: Base names whose output size depends on the *values* of Scalar/float arguments.
_VALUE_SIZED = frozenset({"arange", "range", "linspace", "logspace"})


class Problems(Exception):
    pass


def kernel_plan(
    f: NativeFunction,
    catalogue: Catalogue,
    node_for: Callable[[NativeFunction], LazyIrSchema],
    has_meta: Callable[[NativeFunction], bool],
) -> KernelPlan:
    check_returns(f)
    kind = f.kind()
    target: str | None = None
    computed = f
    if kind is SchemaKind.inplace:
        target = _written(f)
        functional = catalogue.group_of(f).functional
        mode = "inplace"
        if functional is not None:
            computed = functional
    elif kind is SchemaKind.out:
        if len(f.func.arguments.out) != 1:
            raise Problems("out= ops with several outputs are not supported")
        target, mode = f.func.arguments.out[0].name, "out"
    elif kind is SchemaKind.functional:
        mode = "functional"
    else:
        raise Problems(f"{kind.value} ops (mutating inputs they do not return) are not supported")
    node = node_for(computed)
    params = tuple(param(a) for a in kernel_arguments(f))
    base = computed.name.name.removeprefix("_")
    value_dependent = base in _VALUE_SIZED or any(
        str(a.type) in ("float[]", "float[]?") for a in computed.func.arguments.all
    )
    meta = DYNAMIC_SHAPE_TAG not in computed.tags and has_meta(computed)
    return KernelPlan(f, node, params, mode, target, computed.name, meta, value_dependent)


def _written(f: NativeFunction) -> str:
    written = [a.name for a in f.func.arguments.all if a.is_write]
    if len(written) != 1:
        raise Problems("in-place ops must write exactly one argument")
    return written[0]


def kernel_arguments(f: NativeFunction):
    args = f.func.arguments
    return [(a, False) for a in args.positional] + [(a, True) for a in args.kwarg_only + args.out]


def param(item) -> Param:
    arg, keyword_only = item
    default = None if arg.default is None else python_default(arg.type, arg.default)
    return Param(python_name(arg.name), keyword_only, default)


def check_returns(f: NativeFunction) -> None:
    returns = f.func.returns
    if not returns:
        raise Problems("returns nothing; lazy kernels need tensor results")
    for r in returns:
        t = r.type
        if isinstance(t, OptionalType) or (
            isinstance(t, ListType) and (len(returns) > 1 or str(t.elem) != "Tensor")
        ):
            raise Problems(f"return type {t} is not supported (Tensor, tuple of Tensor, Tensor[])")
        if not isinstance(t, ListType) and t.base().name is not BaseTy.Tensor:
            raise Problems(f"return type {t} is not a tensor")
    for a in f.func.arguments.all:
        if a.type.is_tensor_like() and isinstance(a.type, ListType) and a.is_write:
            raise Problems("writes a tensor list")
