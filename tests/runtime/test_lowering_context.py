"""The typed lowering contract (``lowering_context``): ``ctx.call`` takes an ``OpOverload``
or its string, a lowering reads its node's output shapes and recognises the lazy device
through the context, view ``*_copy`` ops may alias (and stride-reading ops then get a
contiguous input, as do ops whose kernels require contiguous inputs), masked-off outputs
still take a value; every method of the contract is
documented. Checked on a small hand-written context (a backend of the scaffold's kind)
and on the built-in TorchScript and FX contexts."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch
from support.training import assert_as_accurate_as_eager

import lazygen.runtime as lr
from lazygen.runtime import Backend, LoweringContext
from lazygen.runtime.backends.fx.lowering import FXLoweringContext
from lazygen.runtime.backends.torchscript.lowering import TSLoweringContext
from lazygen.runtime.graph import post_order
from lazygen.runtime.ir import DeviceData, Shape
from lazygen.runtime.lowering_context import (
    op_string,
    overload_of,
    view_of,
)
from lazygen.runtime.ops.facts import STRIDE_READING_OPS, VIEW_COPY_OPS
from lazygen.runtime.tracing.tensor import inner

aten = torch.ops.aten


class RecordingContext(LoweringContext):
    """A minimal backend context: values are strings naming what made them; every call is
    recorded with what the node being lowered promised (``output_shapes``)."""

    def __init__(self, device=None) -> None:
        super().__init__(device)
        self.calls: list[tuple] = []

    def parameter(self, node):
        return f"input{len(self.parameters)}"

    def set_graph_outputs(self, outputs) -> None:
        self.outputs = [self.values[v] for v in outputs]

    def tensor(self, v):
        return self.values[v]

    def tensor_list(self, vs):
        return [self.tensor(v) for v in vs]

    def optional_tensor_list(self, vs):
        return [None if v is None else self.tensor(v) for v in vs]

    def scalar(self, v):
        return f"scalar({self.values[v]})"

    def symint(self, v):
        return self.values[v]

    def symint_list(self, vs):
        return [self.symint(v) for v in vs]

    def constant(self, value):
        return self.device if self.is_lazy_device(value) else value

    def call(self, op, args, kwargs, num_outputs):
        self.calls.append((overload_of(op), self.output_shapes()))
        return [f"{op_string(op)}#{len(self.calls)}[{i}]" for i in range(num_outputs)]

    def unpack_list(self, value, count):
        return [f"{value}[{i}]" for i in range(count)]


def _lower(tensors) -> RecordingContext:
    outputs = [inner(t)._value for t in tensors]
    order, _ = post_order(outputs)
    ctx = RecordingContext()
    ctx.lower_graph(order, outputs)
    return ctx


def test_a_lowering_reads_output_shapes_through_the_context():
    x = torch.randn(3, 4, device="lazygen")
    y = (x @ x.t()).to(torch.float64)
    ctx = _lower([y])
    promised = {op: shapes for op, shapes in ctx.calls}
    assert promised[aten.mm.default] == (Shape(torch.float32, (3, 3)),)
    assert promised[aten._to_copy.default] == (Shape(torch.float64, (3, 3)),)
    assert ctx.output_dtype() == torch.float64  # the last node lowered: the cast
    assert ctx.output_sizes(0) == (3, 3)
    with pytest.raises(lr.LazygenRuntimeError, match="has no output 1"):
        ctx.output_dtype(1)


def test_output_shapes_outside_a_lowering_says_so():
    with pytest.raises(lr.LazygenRuntimeError, match="no node is being lowered"):
        RecordingContext().output_shapes()


def test_masked_off_outputs_are_none_and_still_take_a_value():
    """``native_layer_norm_backward`` with only the input's gradient asked for: the node's
    other two shapes are None, ``call`` is asked for three values, the graph runs."""
    x = torch.randn(2, 5)
    grad, mean, rstd = torch.randn(2, 5), torch.randn(2, 1), torch.rand(2, 1) + 0.5
    args = ([5], mean, rstd, None, None, [True, False, False])
    lazy = [t.to("lazygen") for t in (grad, x)]
    lazy_args = [a.to("lazygen") if isinstance(a, torch.Tensor) else a for a in args]
    result = aten.native_layer_norm_backward(*lazy, *lazy_args)
    assert result[1] is None and result[2] is None
    ctx = _lower([result[0]])
    ((op, shapes),) = [c for c in ctx.calls if c[0] == aten.native_layer_norm_backward.default]
    assert shapes == (Shape(torch.float32, (2, 5)), None, None)
    with pytest.raises(lr.LazygenRuntimeError, match="its mask left off"):
        ctx.output_dtype(1)
    want = aten.native_layer_norm_backward(grad, x, *args)[0]
    torch.testing.assert_close(result[0].cpu(), want)


class BareValueContext(RecordingContext):
    """A newcomer's ``call``: its one value bare (``mode`` "bare"), a tensor ("tensor"),
    or a value too many ("extra")."""

    mode = "bare"

    def call(self, op, args, kwargs, num_outputs):
        values = super().call(op, args, kwargs, num_outputs)
        if self.mode == "bare":
            return values[0]
        if self.mode == "tensor":
            return torch.ones(3, 3)  # len() 3: once read as three values
        return values + values


@pytest.mark.parametrize(
    "mode, message",
    [
        ("bare", "lower() returned a str, not a list of one value per output (1)"),
        ("tensor", "lower() returned a Tensor, not a list of one value per output (1)"),
        ("extra", "lower() returned 2 values for 1 outputs"),
    ],
)
def test_a_call_that_returns_no_list_of_outputs_is_a_lowering_error(mode, message):
    """Was "compilation ... failed: TypeError: object of type 'Register' has no len()" for
    the scaffold's registers, and read a tensor's first size as a count of values."""
    x = torch.ones(3, 3).to("lazygen")  # device data: mm is the one node lowered
    y = x @ x
    outputs = [inner(y)._value]
    order, _ = post_order(outputs)
    ctx = BareValueContext()
    ctx.mode = mode
    with pytest.raises(lr.LazyGraphError) as info:
        ctx.lower_graph(order, outputs)
    assert info.value.stage == "lowering" and info.value.op_name == "mm"
    assert message in str(info.value), str(info.value)
    assert "backend's error" in str(info.value)


def test_the_lazy_device_is_recognised_under_its_name():
    name = lr.device_name()
    assert lr.is_lazy_device(torch.device(name)) and lr.is_lazy_device(f"{name}:1")
    assert lr.is_lazy_device(torch.device(name, 0))
    for other in (torch.device("cpu"), "cpu", "meta", f"{name}x", None, 0):
        assert not lr.is_lazy_device(other), other
    ctx = RecordingContext("cpu")
    assert ctx.constant(torch.device(name, 0)) == torch.device("cpu")
    assert ctx.constant(torch.device("meta")) == torch.device("meta")


def test_op_strings_and_overloads_are_interchangeable():
    assert op_string(aten.add.Tensor) == "aten::add.Tensor"
    assert op_string(aten.relu.default) == "aten::relu"
    assert op_string("tiny::silu") == "tiny::silu"
    assert overload_of(aten.add.Tensor) is aten.add.Tensor
    assert overload_of("aten::add.Tensor") is aten.add.Tensor
    assert overload_of("aten::relu") is aten.relu.default
    assert overload_of("tiny::silu") is None
    with pytest.raises(TypeError, match=r"name the overload \(\.default"):
        op_string(aten.relu)
    with pytest.raises(TypeError, match="not int"):
        overload_of(3)


def _ts_graph(op) -> str:
    ctx = TSLoweringContext()
    a = ctx.add_parameter(DeviceData(torch.ones(2, 2)))
    (out,) = ctx.call(op, [a, a], {}, 1)
    ctx.graph.registerOutput(out)
    return str(ctx.graph)


def _fx_targets(op) -> list:
    ctx = FXLoweringContext()
    a = ctx.add_parameter(DeviceData(torch.ones(2, 2)))
    ctx.call(op, [a, a], {}, 1)
    return [n.target for n in ctx.graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize("overload", [aten.mul.Tensor, aten.mm.default])
def test_builtin_contexts_take_an_overload_as_its_string(overload):
    assert _ts_graph(overload) == _ts_graph(op_string(overload))
    assert _fx_targets(overload) == _fx_targets(op_string(overload)) == [overload]


def test_view_copies_map_to_the_views_they_copy():
    assert view_of(aten.t_copy.default) is aten.t.default
    assert view_of("aten::transpose_copy.int") is aten.transpose.int
    assert view_of(aten.split_copy.Tensor) is aten.split.Tensor
    assert view_of(aten.view_copy.default) is aten.reshape.default  # any layout
    assert view_of(aten.view_copy.dtype) is None
    for packet in STRIDE_READING_OPS & VIEW_COPY_OPS:
        assert view_of(packet.default) is None  # their input must be contiguous
    assert view_of(aten.clone.default) is None and view_of("tiny::silu") is None
    for packet in VIEW_COPY_OPS:  # every one is an aten op whose view exists
        name = packet._qualified_op_name.removeprefix("aten::")
        assert hasattr(aten, name.removesuffix("_copy")), name


def test_as_strided_reads_a_transposed_result_as_contiguous():
    """Regression: the TorchScript backend runs ``t_copy`` as ``t`` (a view); an
    ``as_strided_copy`` of that view read the untransposed storage ([[0, 2], [1, 3]]
    instead of eager's [[0, 1], [3, 4]])."""
    x = torch.arange(6.0).reshape(2, 3)
    for device in ("cpu", "lazygen"):
        y = x.to(device) * 1
        z = torch.as_strided(y.t().contiguous(), (2, 2), (1, 2))
        assert z.cpu().tolist() == [[0.0, 1.0], [3.0, 4.0]], device
    assert "aten::contiguous" in lr.debug.last_graph()


def _strided(t: torch.Tensor) -> torch.Tensor:
    """``t``'s values as a view with stride 2 in its last dimension, made inside the graph
    (lazily a ``select_copy`` the TorchScript backend runs as a view)."""
    return torch.stack([t, t], -1).select(-1, 0)


def _run(fn, *inputs):
    """``fn`` eagerly, lazily and in float64 on ``inputs`` (leaves that need a gradient):
    each run's results, then the gradients of their sum, moved to the CPU."""

    def once(device, dtype=None):
        leaves = [
            x.detach()
            .to(device, dtype if x.is_floating_point() else None)
            .requires_grad_(x.requires_grad)
            for x in inputs
        ]
        out = fn(*leaves)
        out.sum().backward()
        return [out.detach().cpu(), *(x.grad.cpu() for x in leaves if x.requires_grad)]

    return once("cpu"), once("lazygen"), once("cpu", torch.float64)


def _norm_of_transposed(x, weight, bias):
    h = (x * 2).transpose(1, 2)  # a strided view of a graph value
    return torch.nn.functional.group_norm(h, 2, weight, bias) * torch.arange(6.0, device=x.device)


def _norm_then_transposed(x, weight, bias):
    h = torch.nn.functional.group_norm((x * 2).reshape(2, 4, 6), 2, weight, bias)  # contiguous
    return h.transpose(1, 2) * torch.arange(4.0, device=x.device)  # dY: a strided view


@pytest.mark.parametrize("fn", [_norm_of_transposed, _norm_then_transposed])
def test_group_norm_of_strided_views(fn):
    """Regression (diffusers' attention blocks, ``group_norm(h.transpose(1, 2))``): eager's
    ``group_norm`` makes its input contiguous before ``native_group_norm``, a no-op on a
    lazy tensor, and the TorchScript backend ran the transpose as a view, so the kernel
    raised "Expected X.is_contiguous(memory_format)"; ``native_group_norm_backward`` read a
    transposed gradient as contiguous and returned other gradients, without an error
    (AutoencoderKL and UNet1DModel trained to other weights)."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 6, 4, generator=generator).requires_grad_()
    weight = torch.randn(4, generator=generator).requires_grad_()
    bias = torch.randn(4, generator=generator).requires_grad_()
    eager, lazy, wide = _run(fn, x, weight, bias)
    assert_as_accurate_as_eager(lazy, eager, wide)


def _bags(weight, indices, offsets):
    return torch.nn.functional.embedding_bag(_strided(indices), _strided(weight), _strided(offsets))


def _complex_of_transposed(x):
    return torch.view_as_complex((x * 1).t())  # lazily contiguous; in the graph a view


@pytest.mark.parametrize("name", ["embedding_bag", "pdist", "view_as_complex"])
def test_kernels_that_need_contiguous_inputs_get_them(name):
    """Regression: ``_embedding_bag_forward_only`` read strided indices and offsets as
    contiguous (other bags' sums, no error); ``_pdist_forward`` raised "requires contiguous
    input" (eager's composites make their inputs contiguous first);
    ``view_as_complex_copy`` of a transposed graph value, contiguous as a lazy tensor,
    raised "Tensor must have a last dimension with stride 1"."""
    generator = torch.Generator().manual_seed(0)
    if name == "embedding_bag":
        fn = _bags
        inputs = [torch.randn(10, 3, generator=generator), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])]
        inputs.append(torch.tensor([0, 4]))
    elif name == "pdist":
        fn, inputs = lambda points: torch.pdist(_strided(points)), [torch.randn(5, 3)]
    else:
        fn, inputs = _complex_of_transposed, [torch.arange(6.0).reshape(2, 3)]
        want = torch.view_as_complex(inputs[0].t().contiguous())  # eager needs the copy
    if name != "view_as_complex":
        want = fn(*inputs)
    got = fn(*(x.to("lazygen") for x in inputs)).cpu()
    torch.testing.assert_close(got, want)


def test_contiguous_input_ops_are_made_contiguous_in_torchscript():
    """Every op of ``CONTIGUOUS_INPUT_OPS`` gets each tensor input through
    ``aten::contiguous`` in the TorchScript backend (a no-op on contiguous tensors)."""
    x = torch.randn(2, 6, 4, device="lazygen") * 2
    torch.nn.functional.group_norm(x.transpose(1, 2), 2).cpu()
    graph = lr.debug.last_graph()
    assert graph.index("aten::transpose") < graph.index("aten::contiguous")
    assert graph.index("aten::contiguous") < graph.index("aten::native_group_norm")


@pytest.mark.parametrize("cls", [LoweringContext, Backend])
def test_every_method_of_the_contract_is_documented(cls):
    undocumented = [
        name
        for name, member in vars(cls).items()
        if inspect.isfunction(member) and not (member.__doc__ or "").strip()
    ]
    assert not undocumented, f"{cls.__name__}: {undocumented}"


@pytest.mark.parametrize("cls", [LoweringContext, Backend])
def test_the_backend_guide_shows_every_method(cls):
    """docs/backend-guide.md names each public method of the contract (sections 5, 6)."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "backend-guide.md").read_text()
    public = [
        name
        for name, member in vars(cls).items()
        if inspect.isfunction(member) and not name.startswith("_")
    ]
    missing = [name for name in public if f"{name}(" not in guide]
    assert not missing, f"{cls.__name__} methods the guide does not show: {missing}"
