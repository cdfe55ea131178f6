"""Per-op views the templates read: ``KernelView`` (one generated kernel: its parameters,
the fast path, the node it builds) and ``NodeView`` (one IR node class: its operands and
lowering arguments). Apart from ``template_models.py``, which assembles one model per output
file from the plan; a view is what a template prints for one op, derived from its plan.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass

from lazygen.lazy.arguments import ArgKind, LazyArgument
from lazygen.lazy.defaults import double_quoted
from lazygen.lazy.ir_schema import LazyIrSchema
from lazygen.lazy.plan import KernelPlan, Param
from lazygen.model.types import BaseTy
from lazygen.render.layout import Group, Part, dict_display, list_display, tuple_display


@dataclass(frozen=True, slots=True)
class KernelView:
    """A kernel plus the local names its body uses (chosen not to clash with parameters)."""

    plan: KernelPlan
    node_module: str
    device_var: str
    operands_var: str
    attrs_var: str
    shapes_var: str

    @property
    def params(self) -> tuple[Param, ...]:
        return self.plan.params

    @property
    def operands(self) -> tuple[LazyArgument, ...]:
        return self.plan.node.operands

    @property
    def attributes(self) -> tuple[LazyArgument, ...]:
        return self.plan.node.attributes

    @property
    def positional(self) -> tuple[Param, ...]:
        return tuple(p for p in self.plan.params if not p.keyword_only)

    @property
    def keyword(self) -> tuple[Param, ...]:
        return tuple(p for p in self.plan.params if p.keyword_only)

    @property
    def device_option(self) -> str | None:
        """The `device=` option of factory-like ops (`ones_like`): another device runs the
        op eagerly there instead of lazily."""
        for arg in self.plan.function.func.arguments.kwarg_only:
            if arg.name == "device" and arg.type.base().name is BaseTy.Device:
                return next(p.name for p in self.plan.params if p.name == "device")
        return None

    @property
    def check_errors_option(self) -> str | None:
        """The `bool check_errors` option of linalg `_ex` ops: when set, the op raises on
        the values it computes (a singular matrix), which a traced graph could only report
        at `mark_step`; such calls run eagerly so that the error is raised at the call."""
        for arg in self.plan.function.func.arguments.all:
            if arg.name == "check_errors" and str(arg.type) == "bool":
                return next(p.name for p in self.plan.params if p.name == "check_errors")
        return None

    @property
    def eager_when(self) -> str | None:
        """The condition under which the kernel hands the call to the eager fallback."""
        conditions = []
        if self.device_option is not None:
            conditions.append(f"rt.elsewhere({self.device_option})")
        if self.check_errors_option is not None:
            conditions.append(self.check_errors_option)
        return " or ".join(conditions) or None

    @property
    def aten_overload(self) -> str:
        return aten_ref(str(self.plan.shape_op))

    @property
    def operand_exprs(self) -> tuple[Part, ...]:
        """The lazy operands: each argument turned into an IR value on the kernel's device; a
        generator also gets the call, which `rt.generator` replays to advance it as eager."""
        return tuple(_operand_expr(a, self) for a in self.operands)

    @property
    def attr_exprs(self) -> tuple[str, ...]:
        """The node's attributes, lists as (hashable) tuples."""
        return tuple(_attr_expr(a) for a in self.attributes)

    @property
    def device_args(self) -> tuple[str, ...]:
        return tuple(a.ident for a in self.plan.device_args)

    @property
    def call_arguments(self) -> tuple[Part, Part]:
        """The call's positional arguments (a tuple) and keyword arguments (a dict)."""
        keywords = (f"{double_quoted(p.name)}: {p.name}" for p in self.keyword)
        return (tuple_display(p.name for p in self.positional), dict_display(keywords))

    @property
    def call_args(self) -> tuple[Part, ...]:
        """The aten overload, then the call's positional arguments and keyword arguments."""
        return (self.aten_overload, *self.call_arguments)

    @property
    def compute_fn_args(self) -> tuple[str, ...]:
        """`compute_fn=...` when the op's shapes come from a hand-written function."""
        if self.plan.meta:
            return ()
        return (f"compute_fn=shape_functions.{self.plan.shape_function}",)

    @property
    def shape_args(self) -> tuple[Part, ...]:
        """The arguments of `rt.infer_shapes`: the call, then how to compute the shapes."""
        dependent = ("value_dependent=True",) if self.plan.value_dependent else ()
        return (*self.call_args, *self.compute_fn_args, *dependent)

    @property
    def node_class(self) -> str:
        return f"{self.node_module}.{self.plan.node.node_name}"

    @property
    def node_args(self) -> tuple[str, ...]:
        """The arguments of `rt.make_node`: the node class, operands, attributes, shapes,
        device."""
        return (
            self.node_class,
            self.operands_var,
            self.attrs_var,
            self.shapes_var,
            self.device_var,
        )

    @property
    def fast_path(self) -> bool:
        """Whether the kernel has a fast path (`rt.trace`): a single-output functional op
        with at least one `Tensor` argument, no generator and no eager case."""
        return (
            self.result == "wrap"
            and not self.eager_when
            and bool(self.fast_tensors)
            and not any(a.is_generator for a in self.operands)
        )

    @property
    def traced_op(self) -> str:
        """The module constant holding the fast path's `rt.TracedOp`; upper case, so it
        never clashes with a (lower-case) kernel name."""
        return self.plan.name.upper() + "_OP"

    @property
    def fast_tensors(self) -> tuple[str, ...]:
        """The `Tensor` arguments the fast path requires to be lazy tensors."""
        return tuple(a.ident for a in self.operands if a.kind is ArgKind.tensor)

    @property
    def traced_op_args(self) -> tuple[str, ...]:
        """`rt.TracedOp(counter, shape overload, node class[, compute_fn=...])`."""
        counter = double_quoted(f"lazy::{self.plan.op_name}")
        return (counter, self.aten_overload, self.node_class, *self.compute_fn_args)

    @property
    def fast_device_tensor(self) -> str | None:
        """The argument whose `_device` is the kernel's device: the first tensor-like
        argument, where `rt.device_of` would find it, when it is a plain `Tensor` (the
        guard has checked it is lazy); None: the fast path asks `rt.device_of` too."""
        first = self.plan.device_args[0]
        return first.ident if first.kind is ArgKind.tensor else None

    @property
    def fast_key(self) -> Group:
        """The shape-cache key: the `TracedOp`, then per parameter its `_shape` (a lazy
        tensor) or `rt.shape_key` (anything else)."""
        tensors = set(self.fast_tensors)
        dependent = self.plan.value_dependent
        arguments = {a.ident: a for a in self.plan.node.arguments}
        parts = [self.traced_op]
        for p in self.plan.params:
            if p.name in tensors:
                parts.append(f"{p.name}._shape")
            else:
                argument = arguments.get(p.name)
                if argument is None:
                    parts.append(f"rt.shape_key({p.name}{', True' if dependent else ''})")
                else:
                    parts.append(_shape_key_expr(argument, dependent))
        return tuple_display(parts)

    @property
    def fast_operand_exprs(self) -> Group:
        """The operands, with each lazy `Tensor` argument's value read directly."""
        return tuple_display(
            f"{a.ident}._value" if a.kind is ArgKind.tensor else _operand_expr(a, self)
            for a in self.operands
        )

    @property
    def fast_trace_args(self) -> tuple[Part, ...]:
        """The arguments of `rt.trace`."""
        return (
            self.traced_op,
            self.fast_key,
            *self.call_arguments,
            self.fast_operand_exprs,
            tuple_display(self.attr_exprs),
            self.device_var,
        )

    @property
    def result(self) -> str:
        """`wrap`, `wrap_tuple`, `wrap_list` or `inplace`."""
        if self.plan.mode != "functional":
            return "inplace"
        if self.plan.node.returns_list:
            return "wrap_list"
        return "wrap_tuple" if self.plan.node.num_outputs > 1 else "wrap"


def _shape_key_expr(arg: LazyArgument, value_dependent: bool) -> str:
    """``rt.shape_key(name)``, with its result for the argument's usual Python type inlined
    ahead of the call: a call is ~0.1 us, a type check ~30 ns, and a traced op makes one
    per argument that is not a tensor (an ``int`` dim, ``add``'s ``alpha``, an optimizer's
    float ``mul.Scalar``). The inlined case gives what ``shape_key`` gives for that type:
    an int itself, a float's type (its value only where shapes depend on values)."""
    name, schema_type = arg.ident, str(arg.type)
    call = f"rt.shape_key({name}{', True' if value_dependent else ''})"
    if schema_type in ("int", "SymInt") or (
        schema_type == "Scalar" and (value_dependent or arg.default == "1")
    ):
        return f"{name} if type({name}) is int else {call}"
    if schema_type == "Scalar":
        return f"float if type({name}) is float else {call}"
    return call


def _operand_expr(a: LazyArgument, view: KernelView) -> Part:
    if a.is_generator:
        return Group("rt.generator(", (a.ident, view.device_var, *view.call_args), ")")
    if a.dropped_at_one:
        return (
            f"None if type({a.ident}) is int and {a.ident} == 1"
            f" else rt.{a.call}({a.ident}, {view.device_var})"
        )
    return f"rt.{a.call}({a.ident}, {view.device_var})"


def _attr_expr(a: LazyArgument) -> str:
    if a.is_list and a.is_optional:
        return f"None if {a.ident} is None else tuple({a.ident})"
    return f"tuple({a.ident})" if a.is_list else a.ident


@dataclass(frozen=True, slots=True)
class NodeView:
    """An IR node class to print: the node, plus what its `lower` method passes on."""

    node: LazyIrSchema

    @property
    def operand_locals(self) -> tuple[str, ...]:
        return tuple(a.local for a in self.node.operands)

    @property
    def lowering_args(self) -> Group:
        """The positional arguments `lower` passes to `ctx.call`: operands as the backend's
        values (a generator as the graph's `Generator?` input), attributes as constants."""
        return list_display(_lowering_input(a) for a in self.node.positional)

    @property
    def lowering_kwargs(self) -> Group:
        """The keyword-only arguments, by name, in schema order."""
        return dict_display(
            f"{double_quoted(a.name)}: {_lowering_input(a)}" for a in self.node.keyword
        )


def _lowering_input(a: LazyArgument) -> str:
    if a.dropped_at_one:
        return f"ctx.constant(1) if {a.local} is None else ctx.{a.call}({a.local})"
    if a.is_operand:
        return f"ctx.{a.call}({a.local})"
    return f"ctx.constant(self.attrs[{a.slot}])"


def _local(preferred: str, taken: set[str]) -> str:
    name = preferred
    while name in taken:
        name = f"lazy_{name}"
    return name


def kernel_view(plan: KernelPlan) -> KernelView:
    taken = {p.name for p in plan.params}
    module = "non_native_ir" if not plan.node.native else "ir"
    return KernelView(
        plan,
        module,
        _local("device", taken),
        _local("operands", taken),
        _local("attrs", taken),
        _local("shapes", taken),
    )


def aten_ref(op_name: str) -> str:
    """The `torch.ops.aten` overload of `op_name` as a Python expression (`aten.add.Tensor`)."""
    name, _, overload = op_name.partition(".")
    overload = overload or "default"
    if keyword.iskeyword(overload):
        return f'getattr(aten.{name}, "{overload}")'
    return f"aten.{name}.{overload}"
