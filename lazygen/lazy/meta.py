"""Does an op have a usable meta kernel? Asked of the running torch's dispatcher.

Rule: an op gets its output shapes from the meta path when the dispatcher has a kernel
for it under `Meta` (structured kernels, C++ and Python meta registrations) or under a
composite key (`CompositeExplicitAutograd[NonFunctional]`, `CompositeImplicitAutograd`),
which decompose into ops that do; and the op is not tagged `dynamic_output_shape` (its
output size depends on tensor values, which meta tensors do not have). Every other op
needs a hand-written `compute_shape_<op>`.

The questions take plain strings (`*_named`, `*_of_text`) so that `lazygen.lazy.torch_child`
can ask them in a child process; the `NativeFunction` forms are what the planner uses.
"""

from __future__ import annotations

from lazygen.model.native_function import NativeFunction

META_KEYS = (
    "Meta",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "CompositeImplicitAutograd",
)


def has_meta_kernel_named(op_name: str) -> bool:
    """True when `aten::<op_name>` (`add.Tensor`) runs on meta tensors in the installed torch."""
    import torch

    name = f"aten::{op_name}"
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    try:
        return any(has_kernel(name, key) for key in META_KEYS)
    except RuntimeError:  # not registered in this torch at all
        return False


def has_meta_kernel(f: NativeFunction) -> bool:
    """True when `f` runs on meta tensors in the installed torch."""
    return has_meta_kernel_named(str(f.name))


def _category(text: str) -> tuple[bool, bool, bool]:
    """(tensor-like, list, optional) of a type, in schema (`Tensor?[]`) or JIT spelling."""
    optional = text.endswith("?") or text.startswith("Optional[")
    inner = text.removesuffix("?").removeprefix("Optional[")
    is_list = inner.startswith("List[") or (not inner.startswith("List") and "[" in inner)
    return "Tensor" in text, is_list, optional


def has_torchscript_builtin(kind: str, argument_types: tuple[str, ...]) -> bool:
    """True when TorchScript has an operator `kind` taking arguments of these categories.

    Any identifier is a valid `opkind`; one without a namespace (`mybk_silu`) or one
    TorchScript refuses to look up simply has no builtin, so the answer is False.
    """
    import torch

    if "::" not in kind:
        return False
    try:
        schemas = torch._C._jit_get_schemas_for_operator(kind)
    except RuntimeError:
        return False
    wanted = tuple(_category(t) for t in argument_types)
    for schema in schemas:
        if tuple(_category(str(a.type)) for a in schema.arguments) == wanted:
            return True
    return False


def registered_schema_named(name: str, overload: str) -> str | None:
    """The running torch's schema of `aten::<name>.<overload>`, or None."""
    import torch

    try:
        return str(torch._C._get_schema(f"aten::{name}", overload))
    except RuntimeError:
        return None


def registered_schema(f: NativeFunction) -> str | None:
    """The running torch's schema of `f` (normalised by torch's own parser), or None."""
    return registered_schema_named(f.name.name, f.name.overload)


def normalised_schema_of_text(func: str) -> str:
    """Schema text `func` (without namespace) as torch's parser prints it."""
    import torch

    return str(torch._C.parse_schema(f"aten::{func}"))


def normalised_schema(f: NativeFunction) -> str:
    """`f`'s schema as torch's parser prints it, to compare with `registered_schema`."""
    return normalised_schema_of_text(str(f.func))


class TorchFacts:
    """The questions the planner asks of the installed torch."""

    @staticmethod
    def registered(f: NativeFunction) -> str | None:
        """The running torch's schema of `f`, or None when it lacks the operator."""
        return registered_schema(f)

    @staticmethod
    def normalised(f: NativeFunction) -> str:
        return normalised_schema(f)

    @staticmethod
    def has_meta(f: NativeFunction) -> bool:
        return has_meta_kernel(f)

    @staticmethod
    def has_builtin(kind: str, argument_types: tuple[str, ...]) -> bool:
        return has_torchscript_builtin(kind, argument_types)
