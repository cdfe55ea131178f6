"""The ``Generator?`` operand of a random op: the generator state (or seed) its graph draws
from, after which the real generator is advanced as eager's call would advance it. Part of
the generated-code contract (``kernel_support``)."""

from __future__ import annotations

import torch

from .. import op_registry
from ..devices import LazyDevice
from ..execution import executor
from ..ir import Node, Value
from ..metrics import count
from ..tracing import random_inputs
from ..tracing.tensor import LazyTensor

_new_value = tuple.__new__  # Value(node, i) without the NamedTuple's Python-level __new__


class GeneratorData(Node):
    """The generator a random op draws from: a copy of the state the op's eager call would
    have started from. A graph input (a ``Generator?`` of the TorchScript graph), hashed by
    kind only, so the state never changes the graph; every run starts from the same state."""

    __slots__ = ("state", "device")
    op_kind = "prim::GeneratorData"
    op_name = "generator_data"
    is_input = True
    is_generator = True  # lowered as a ``Generator?`` graph input

    def __init__(self, state: torch.Tensor, device: torch.device) -> None:
        self.operands = ()
        self.attrs = ()
        self.shapes = ()
        self.state = state
        self.device = device
        self.source = None

    def materialize(self) -> torch.Generator:
        generator = torch.Generator(device=self.device)
        generator.set_state(self.state)
        return generator


def default_generator(device: torch.device) -> torch.Generator:
    """The generator eager uses for ``device`` when a random op is given none."""
    if device.type == "cpu":
        return torch.default_generator
    return torch.get_device_module(device.type).default_generators[device.index or 0]


def generator(gen, device: LazyDevice, op, args, kwargs) -> Value:
    """The ``Generator?`` operand of random op ``op``: a copy of the generator's state, after
    which the real generator (``gen``, else the backing device's default one) is advanced
    exactly as eager's call would advance it. The graph then draws eager's numbers. A
    backend whose ``random_numbers`` is ``"seed"`` gets a seed instead (``random_inputs``)."""
    if gen is None:
        gen = default_generator(device.backing)
    if device.backend.random_numbers == "seed":
        return random_inputs.seed_value(gen)
    state = gen.get_state()
    _advance(gen, op, args, kwargs)
    return _new_value(Value, (GeneratorData(state, gen.device), 0))


def _advance(gen: torch.Generator, op, args, kwargs) -> None:
    """Run ``op`` eagerly with generator ``gen``: on zero-filled stand-ins of the lazy inputs
    when its consumption is value-independent, else on their values (a sync)."""
    value_independent = op_registry.has("value_independent_random", op)
    if not value_independent:
        count(op_registry.random_sync_counter(op))
        lazy = [a for a in (*args, *kwargs.values()) if type(a) is LazyTensor]
        executor.sync(lazy)

    def stand_in(a):
        if type(a) is LazyTensor:
            if value_independent:
                return torch.zeros(a._sizes, dtype=a.dtype, device=gen.device)
            return a._value.node.data
        if type(a) in (list, tuple):
            return type(a)(stand_in(x) for x in a)
        return a

    args = [stand_in(a) for a in args]
    kwargs = {k: stand_in(v) for k, v in kwargs.items()}
    if "device" in kwargs:  # factories (normal.float_float): made where the generator is
        kwargs["device"] = gen.device
    for index, argument in enumerate(op._schema.arguments):
        if argument.name == "generator":
            if index < len(args):
                args[index] = gen
            else:
                kwargs["generator"] = gen
            break
    with torch.no_grad():
        op(*args, **kwargs)
