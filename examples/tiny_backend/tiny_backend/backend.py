"""TinyBackend: graphs as straight-line programs run by a small Python interpreter.

A graph lowers to a list of instructions ``(function, args, kwargs, output slots)`` over a
register file; arguments name registers, constants, or lists of either. aten ops run as
their ``torch.ops`` overloads on the data device; the backend's own op kinds (``tiny::*``)
are Python functions in ``OWN_OPS``. Everything here is lazygen's public backend API:
``Backend``, ``KernelTables``, ``LoweringContext`` and ``overload_of``.
"""

from __future__ import annotations

import torch

from lazygen.runtime import Backend, KernelTables, LoweringContext
from lazygen.runtime.lowering_context import is_wrapped_number, overload_of

#: The backend's own ops (non-native op kinds of its op list).
OWN_OPS = {"tiny::silu": lambda x: x * torch.sigmoid(x)}


class _Reg(int):
    """A register number (an int subclass, so constants that are ints stay apart)."""


class _List(list):
    """A list argument whose items are resolved at run time."""


class TinyLoweringContext(LoweringContext):
    def __init__(self, device=None) -> None:
        super().__init__(device)
        self.instructions: list = []
        self.registers = 0
        self.inputs: list[_Reg] = []
        self.outputs: list[_Reg] = []

    def _new(self) -> _Reg:
        self.registers += 1
        return _Reg(self.registers - 1)

    def _emit(self, fn, args, kwargs, count: int) -> list[_Reg]:
        outs = [self._new() for _ in range(count)]
        self.instructions.append((fn, tuple(args), dict(kwargs), tuple(outs)))
        return outs

    def parameter(self, node) -> _Reg:
        reg = self._new()
        self.inputs.append(reg)
        return reg

    def set_graph_outputs(self, outputs) -> None:
        self.outputs = [self.values[v] for v in outputs]

    def tensor(self, v):
        reg = self.values[v]
        if is_wrapped_number(v):  # eager's wrapped-number promotion: cast the 0-dim input
            (reg,) = self._emit(torch.Tensor.to, [reg, self.number_dtype(v)], {}, 1)
        return reg

    def tensor_list(self, vs):
        return _List(self.tensor(v) for v in vs)

    def optional_tensor_list(self, vs):
        return _List(None if v is None else self.tensor(v) for v in vs)

    def scalar(self, v):
        (number,) = self._emit(torch.Tensor.item, [self.values[v]], {}, 1)
        return number

    def symint(self, v):
        (number,) = self._emit(int, [self.values[v]], {}, 1)
        return number

    def symint_list(self, vs):
        return _List(self.symint(v) for v in vs)

    def constant(self, value):
        if isinstance(value, torch.device) and value.type not in ("cpu", "cuda", "meta"):
            return self.device  # the lazy device means the data device
        return list(value) if isinstance(value, tuple) else value

    def call(self, op, args, kwargs, num_outputs):
        fn = OWN_OPS.get(op) or overload_of(op)
        if fn is None:
            raise NotImplementedError(f"the tiny backend cannot run {op!r}")
        if num_outputs == 1:
            return self._emit(fn, args, kwargs, 1)
        (result,) = self._emit(fn, args, kwargs, 1)
        return self.unpack_list(result, num_outputs)

    def unpack_list(self, value, count):
        return [self._emit(lambda seq, i=i: seq[i], [value], {}, 1)[0] for i in range(count)]


class Program:
    """A compiled graph: the instructions and where inputs and outputs live."""

    def __init__(self, ctx: TinyLoweringContext) -> None:
        self.instructions = ctx.instructions
        self.size = ctx.registers
        self.inputs = ctx.inputs
        self.outputs = ctx.outputs

    def run(self, inputs: list) -> list:
        regs: list = [None] * self.size
        for reg, value in zip(self.inputs, inputs, strict=True):
            regs[reg] = value

        def resolve(arg):
            if type(arg) is _Reg:
                return regs[arg]
            if type(arg) is _List:
                return [resolve(a) for a in arg]
            return arg

        for fn, args, kwargs, outs in self.instructions:
            result = fn(*[resolve(a) for a in args], **{k: resolve(a) for k, a in kwargs.items()})
            if len(outs) == 1:
                regs[outs[0]] = result
            else:
                for reg, item in zip(outs, result, strict=True):
                    regs[reg] = item
        return [regs[reg] for reg in self.outputs]

    def __repr__(self) -> str:
        lines = [f"tiny program ({len(self.inputs)} inputs)"]
        for fn, args, kwargs, outs in self.instructions:
            name = getattr(fn, "__name__", str(fn))
            lines.append(f"  {list(outs)} = {name}{tuple(args)} {kwargs or ''}")
        lines.append(f"  return {list(self.outputs)}")
        return "\n".join(lines)


class TinyBackend(Backend):
    name = "tiny"
    device_name = "tiny"

    def kernel_tables(self) -> KernelTables:
        return KernelTables.from_module("tiny_backend.generated.registration")

    def lowering_context(self, device) -> TinyLoweringContext:
        return TinyLoweringContext(device)

    def compile(self, order, outputs, device) -> Program:
        return Program(self.lower(order, outputs, device))

    def execute(self, executable: Program, inputs: list) -> list:
        with torch.no_grad():
            return executable.run(inputs)

    def dump(self, order, outputs, device) -> str:
        return repr(self.compile(order, outputs, device))
