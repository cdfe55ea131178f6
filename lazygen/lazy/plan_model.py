"""What a `BackendPlan` is: the node classes, kernels and hand-written pieces of a backend.

Frozen data only; `lazygen.lazy.plan` builds it, the render's template models and the hand-written
checks read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from lazygen.diagnostics import Location
from lazygen.lazy.arguments import LazyArgument
from lazygen.lazy.ir_schema import LazyIrSchema, snake_name
from lazygen.model.native_function import NativeFunction
from lazygen.model.schema import OperatorName


@dataclass(frozen=True, slots=True)
class Param:
    """One kernel / shape-function parameter: name, keyword-only, Python default text."""

    name: str
    keyword_only: bool
    default: str | None


@dataclass(frozen=True)
class KernelPlan:
    """A generated kernel for one `full_codegen` op."""

    function: NativeFunction
    node: LazyIrSchema
    params: tuple[Param, ...]
    #: `functional`, `inplace` (writes `target`, node is the functional op) or `out`.
    mode: str
    target: str | None
    shape_op: OperatorName
    meta: bool
    value_dependent: bool

    @property
    def name(self) -> str:
        return snake_name(self.function.name)

    @property
    def op_name(self) -> str:
        return str(self.function.name)

    @property
    def shape_function(self) -> str:
        return f"compute_shape_{snake_name(self.shape_op)}"

    @property
    def device_args(self) -> tuple[LazyArgument, ...]:
        """Tensor-like arguments the lazy device is looked for in."""
        return tuple(a for a in self.node.arguments if a.type.is_tensor_like())


@dataclass(frozen=True, slots=True)
class ShapeFunction:
    """A `compute_shape_<op>` the backend must write by hand (no usable meta kernel)."""

    name: str
    op_name: str
    params: tuple[Param, ...]
    location: Location


@dataclass(frozen=True, slots=True, order=True)
class HandWritten:
    """A hand-written function the generated code refers to."""

    name: str
    op_name: str
    location: Location | None
    #: Parameter names it must take, exactly (`None`: not checked this way).
    params: tuple[str, ...] | None = None
    #: For kernels: the schema's parameters, which the dispatcher's call must bind to.
    signature: tuple[Param, ...] | None = None
    #: Why it is needed, when that is not obvious (added to the hint).
    reason: str = ""


@dataclass(frozen=True)
class BackendPlan:
    backend: str
    nodes: tuple[LazyIrSchema, ...]
    non_native: tuple[LazyIrSchema, ...]
    kernels: tuple[KernelPlan, ...]
    supported: tuple[HandWritten, ...]
    autograd: tuple[HandWritten, ...]
    shape_functions: tuple[ShapeFunction, ...]
    lowerings: tuple[HandWritten, ...]
    reuse_checks: tuple[HandWritten, ...]
    creators: tuple[HandWritten, ...]
    #: `compute_shape_<node>` of ShapeCompute / ShapeCache nodes (operands, then attributes).
    node_shape_functions: tuple[HandWritten, ...]
    #: Ops whose shapes come from the meta kernel (for the declarations module).
    meta_ops: tuple[str, ...]

    def counts(self) -> dict[str, int]:
        return {
            "nodes": len(self.nodes),
            "non_native": len(self.non_native),
            "kernels": len(self.kernels),
            "supported": len(self.supported),
            "autograd": len(self.autograd),
            # Both kinds the author writes: of kernels without a meta kernel, and
            # `compute_shape_<node>` of ShapeCompute/ShapeCache nodes.
            "shape_functions": len(self.shape_functions) + len(self.node_shape_functions),
            "lowerings": len(self.lowerings),
        }
