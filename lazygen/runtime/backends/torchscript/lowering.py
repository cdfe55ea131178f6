"""``TSLoweringContext``: the ``LoweringContext`` that builds a TorchScript ``torch._C.Graph``."""

from __future__ import annotations

from types import MappingProxyType

import torch

from ... import state
from ...ir import ScalarData, SizeConstant, Value
from ...lowering_context import (
    LoweringContext,
    fixed_number,
    op_string,
    takes_contiguous_inputs,
)
from ...ops.attention_op import TORCH_CPU_LOWERINGS
from ...state import settings

_TENSOR = torch._C.TensorType.get()
_NUMBER = torch._C.NumberType.get()
_INT = torch._C.IntType.get()
_TENSOR_LIST = torch._C.ListType.ofTensors()
_OPTIONAL_TENSOR_LIST = torch._C.ListType(torch._C.OptionalType(_TENSOR))
_INT_LIST = torch._C.ListType.ofInts()
_GENERATOR = torch._C.OptionalType(torch._C._GeneratorType.get())


class TSLoweringContext(LoweringContext):
    """Maps IR values to TorchScript values of one ``torch._C.Graph`` under construction."""

    def __init__(self, device=None, graph: torch._C.Graph | None = None) -> None:
        super().__init__(device)
        self.graph = graph if graph is not None else torch._C.Graph()
        self._scalars: dict[Value, torch._C.Value] = {}
        self._ints: dict[Value, torch._C.Value] = {}
        self._numbers: dict = {}
        self._constants: dict = {}  # (type, repr) of a constant -> its one graph value

    # Inputs and results ------------------------------------------------------------------

    def parameter(self, node) -> torch._C.Value:
        value = self.graph.addInput()
        value.setType(_GENERATOR if getattr(node, "is_generator", False) else _TENSOR)
        return value

    def set_graph_outputs(self, outputs: list[Value]) -> None:
        if not outputs:  # a graph that only writes its inputs returns None
            self.graph.registerOutput(self.constant(None))
        for value in outputs:
            self.graph.registerOutput(self.values[value])
        if len(outputs) > 1:
            self.graph.makeMultiOutputIntoTuple()

    # One method per argument kind ---------------------------------------------------------

    def tensor(self, v: Value) -> torch._C.Value:
        if isinstance(v.node, ScalarData):
            return self._number_as_tensor(v)
        return self.values[v]

    def tensor_list(self, vs) -> torch._C.Value:
        return self._list([self.values[v] for v in vs], _TENSOR_LIST)

    def optional_tensor_list(self, vs) -> torch._C.Value:
        items = [self.constant(None) if v is None else self.values[v] for v in vs]
        return self._list(items, _OPTIONAL_TENSOR_LIST)

    def scalar(self, v: Value) -> torch._C.Value:
        """A wrapped number read with ``aten::item``; a ``FixedScalar`` int or float as a
        constant (one interpreter instruction less per run). Bools and complex numbers are
        read: a TorchScript ``Scalar`` constant must be an int or a float, and a bool read
        as an int would promote differently."""
        number = fixed_number(v)
        if type(number) is int or type(number) is float:
            return self.constant(number)
        value = self._scalars.get(v)
        if value is None:
            (value,) = self._create("aten::item", [self.values[v]], 1)
            value.setType(_NUMBER)
            self._scalars[v] = value
        return value

    def symint(self, v: Value) -> torch._C.Value:
        if type(v.node) is SizeConstant:
            return self.values[v]  # its constant
        number = fixed_number(v)
        if number is not None:
            return self.constant(number)
        value = self._ints.get(v)
        if value is None:
            (value,) = self._create("aten::Int", [self.values[v]], 1)
            value.setType(_INT)
            self._ints[v] = value
        return value

    def symint_list(self, vs) -> torch._C.Value:
        return self._list([self.symint(v) for v in vs], _INT_LIST)

    def generator(self, v: Value) -> torch._C.Value:
        """A random op's generator: a ``Generator?`` graph input (see ``rt.generator``)."""
        value = self.values[v]
        if value.type() != _GENERATOR:  # a graph built without add_parameter (node by node)
            value.setType(_GENERATOR)
        return value

    def constant(self, value) -> torch._C.Value:
        """A TorchScript constant for any attribute value the contract allows: None, bool,
        int, float, complex, str, ``torch.dtype``/``layout``/``memory_format``/``device``,
        and lists or tuples of them (nested too); a graph value ``symint`` made, in the
        place of an int (a size attribute read from its input), is returned as it is."""
        value = _plain(value)
        if type(value) is torch._C.Value:
            return value
        if type(value) is list:
            if not value:  # attributes' empty lists are int[] (dims, sizes, padding)
                return self._list([], _INT_LIST)
            if torch._C.Value in map(type, value):  # ints, some read from size inputs
                items = [v if type(v) is torch._C.Value else self.constant(v) for v in value]
                return self._list(items, _INT_LIST)
            if all(type(v) in (int, float) for v in value) and float in map(type, value):
                value = [float(v) for v in value]  # float[] given as a mix of ints and floats
        elif type(value) is torch.device and value.type == settings.device_type:
            value = self.device  # the graph runs on the data device
        # One node per distinct constant: TorchScript's first run of a graph grows faster
        # than its node count with many equal constants (docs/benchmarks.md).
        # repr() tells 1 from 1.0 from True and 0.0 from -0.0, which == does not.
        key = (type(value), repr(value))
        constant = self._constants.get(key)
        if constant is None:
            constant = self._constants[key] = self.graph.insertConstant(value)
        return constant

    def call(self, op, args: list, kwargs: dict, num_outputs: int) -> list:
        """TorchScript nodes take every argument positionally (a node missing one has no
        schema) and name the op without its overload: the graph picks it by types. ``op``
        is an ``OpOverload`` or its string. The runtime's neutral ops run as torch's CPU
        kernels (``TORCH_CPU_LOWERINGS``): a Python op in the graph would take the GIL on
        the inter-op thread that runs it (see ``backend._launcher``)."""
        name = op_string(op)
        neutral = TORCH_CPU_LOWERINGS.get(name)
        if neutral is not None:
            return neutral(self, name, list(args), dict(kwargs), num_outputs)
        kind = name.partition(".")[0]
        inputs = list(args)
        if kwargs:
            inputs.extend(kwargs.values())
        view = _VIEWS.get(kind)
        if view is not None and (view != "aten::reshape" or _is_int_list(inputs[1])):
            kind = view
        elif takes_contiguous_inputs(op):  # they may be aliasing views
            inputs = [self._contiguous(v) if v.type().kind() == "TensorType" else v for v in inputs]
        return self._create(kind, inputs, num_outputs)

    def value_list(self, items: list) -> torch._C.Value:
        return self._list(list(items), _TENSOR_LIST)

    def unpack_list(self, value: torch._C.Value, count: int) -> list:
        return self._create("prim::ListUnpack", [value], count)

    # Helpers --------------------------------------------------------------------------

    def _contiguous(self, value: torch._C.Value) -> torch._C.Value:
        """``value`` made contiguous (an aliasing view copied; a contiguous tensor as is)."""
        return self._create("aten::contiguous", [value, self.constant(0)], 1)[0]

    def _create(self, kind: str, inputs: list, num_outputs: int) -> list:
        node = self.graph.create(kind, inputs, num_outputs)
        self.graph.insertNode(node)
        return list(node.outputs())

    def _number_as_tensor(self, v: Value) -> torch._C.Value:
        """A wrapped Python number: its 0-dim tensor input, cast to ``number_dtype``."""
        natural = v.node.shapes[0].dtype
        dtype = self.number_dtype(v)
        if dtype == natural:
            return self.values[v]
        value = self._numbers.get((v, dtype))
        if value is None:
            none = self.constant(None)
            args = [self.values[v], self.constant(dtype), none, none, none]
            (value,) = self._create("aten::_to_copy", args + [self.constant(False), none], 1)
            self._numbers[(v, dtype)] = value
        return value

    def _list(self, items: list, list_type) -> torch._C.Value:
        node = self.graph.create("prim::ListConstruct", items, 1)
        self.graph.insertNode(node)
        output = node.output()
        output.setType(list_type)
        return output


# Functionalization's ``*_copy`` ops run as the view ops they copy: graph results and
# device data are never written in place (mutation is functionalized; the eager fallback
# copies what it mutates), so aliasing is invisible, and it saves a copy per op (each
# linear layer's backward has two transposed weight copies). Results that are not
# contiguous are made so when they become device data.
_VIEWS = MappingProxyType(
    {
        "aten::t_copy": "aten::t",
        "aten::detach_copy": "aten::detach",
        "aten::alias_copy": "aten::alias",
        "aten::transpose_copy": "aten::transpose",
        "aten::permute_copy": "aten::permute",
        "aten::unsqueeze_copy": "aten::unsqueeze",
        "aten::squeeze_copy": "aten::squeeze",
        "aten::expand_copy": "aten::expand",
        "aten::slice_copy": "aten::slice",
        "aten::select_copy": "aten::select",
        "aten::diagonal_copy": "aten::diagonal",
        "aten::view_copy": "aten::reshape",  # view needs compatible strides; reshape copies if not
    }
)


def _is_int_list(value) -> bool:
    return value.type().kind() == "ListType"  # view_copy(self, int[] size), not (self, dtype)


_MEMORY_FORMATS = MappingProxyType(
    {
        torch.contiguous_format: 0,
        torch.preserve_format: 1,
        torch.channels_last: 2,
        torch.channels_last_3d: 3,
    }
)


@state.memo
def _enum_int(value) -> int:
    """The int TorchScript stores for a torch.dtype / torch.layout."""
    graph = torch._C.Graph()  # kept alive while its constant is read
    return graph.insertConstant(value).toIValue()


def _plain(value):
    """Tuples become lists and enums ints, recursively, as TorchScript constants hold them."""
    kind = type(value)
    if kind is tuple or kind is list or kind is torch.Size:
        return [_plain(v) for v in value]
    if kind is torch.dtype or kind is torch.layout:
        return _enum_int(value)
    if kind is torch.memory_format:
        return _MEMORY_FORMATS[value]
    return value
