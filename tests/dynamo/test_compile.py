"""torch.compile(backend="lazygen"): training and inference equal eager, graphs are captured
once per input metadata and replayed, and what cannot be captured runs eagerly, counted."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import lazygen.dynamo as ld
import lazygen.runtime as lr
from lazygen.dynamo.compiled import CompiledGraph

from .conftest import count


def _close(a, b, tol=1e-5):
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, atol=tol, rtol=tol)


def test_the_name_reaches_dynamo_through_the_entry_point_without_wiring_torch():
    code = (
        "import torch\n"
        "from torch._dynamo.backends.registry import lookup_backend\n"
        "import lazygen.dynamo\n"
        "assert lookup_backend('lazygen') is lazygen.dynamo.lazygen_backend\n"
        "assert torch._C._get_privateuse1_backend_name() == 'privateuseone'\n"
        "f = torch.compile(lambda x: x.sin() * 2, backend='lazygen')\n"
        "x = torch.randn(3)\n"
        "assert torch.allclose(f(x), x.sin() * 2)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=240)


def _train(model, steps, x, y, compiled_step=None, opt_cls=torch.optim.SGD, **opt_kw):
    opt = opt_cls(model.parameters(), **opt_kw)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = torch.compile(step, backend="lazygen") if compiled_step else step
    return [run().item() for _ in range(steps)]


def test_mlp_training_equals_eager_and_captures_once():
    model = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 5))
    ref = copy.deepcopy(model)
    x, y = torch.randn(8, 12), torch.randint(0, 5, (8,))
    compiled = torch.compile(model, backend="lazygen")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for _ in range(4):  # optimizer step outside the compiled region
        for m, o in ((compiled, opt), (ref, ref_opt)):
            o.zero_grad()
            torch.nn.functional.cross_entropy(m(x), y).backward()
            o.step()
    _close(list(model.parameters()), list(ref.parameters()))
    assert count("DynamoCapture") == 2  # forward and backward, once each
    assert count("UncachedCompile") == 2
    assert count("DynamoEagerGraph") == 0
    report = ld.report()
    assert "forward" in report and "backward" in report


def test_cnn_training_equals_eager():
    def make():
        torch.manual_seed(1)
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 3),
            torch.nn.BatchNorm2d(4),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Flatten(),
            torch.nn.Linear(36, 5),
        )

    model, ref = make(), make()
    x, y = torch.randn(2, 3, 8, 8), torch.randint(0, 5, (2,))
    got = _train(model, 3, x, y, compiled_step=True, lr=0.1, momentum=0.9)
    want = _train(ref, 3, x, y, lr=0.1, momentum=0.9)
    _close([torch.tensor(got)], [torch.tensor(want)])
    _close(
        list(model.parameters()) + list(model.buffers()),
        list(ref.parameters()) + list(ref.buffers()),
    )
    assert count("DynamoEagerGraph") == 0


def test_adam_inside_the_compiled_step_does_not_recompile_as_its_step_count_changes():
    def make():
        torch.manual_seed(2)
        return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))

    model, ref = make(), make()
    x, y = torch.randn(4, 6), torch.randint(0, 3, (4,))
    got = _train(model, 5, x, y, compiled_step=True, opt_cls=torch.optim.Adam, lr=0.01)
    captures = count("DynamoCapture")
    want = _train(ref, 5, x, y, opt_cls=torch.optim.Adam, lr=0.01)
    _close([torch.tensor(got)], [torch.tensor(want)], tol=1e-4)
    _close(list(model.parameters()), list(ref.parameters()), tol=1e-4)
    assert captures <= 8  # first steps specialise, then Adam's step is a graph input
    assert count("DynamoEagerGraph") == 0


@pytest.mark.slow
def test_transformer_layer_with_dropout_and_adamw_inside_equals_eager():
    def make():
        torch.manual_seed(3)
        return torch.nn.TransformerDecoderLayer(16, 4, 32, dropout=0.1, batch_first=True)

    model, ref = make(), make()
    x, memory = torch.randn(3, 6, 16), torch.randn(3, 6, 16)

    def stepper(m):
        opt = torch.optim.AdamW(m.parameters())

        def step():
            opt.zero_grad()
            loss = m(x, memory).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        return step

    run, ref_run = torch.compile(stepper(model), backend="lazygen"), stepper(ref)
    for i in range(3):
        torch.manual_seed(10 + i)
        got = run()
        torch.manual_seed(10 + i)
        want = ref_run()
        _close([got], [want], tol=1e-4)
    _close(list(model.parameters()), list(ref.parameters()), tol=1e-4)
    assert count("DynamoEagerGraph") == 0


def test_random_ops_draw_eagers_numbers_and_advance_the_generator_as_eager():
    def f(x):
        y = torch.nn.functional.dropout(x, 0.5)
        return torch.nn.functional.dropout(y.t(), 0.3) + torch.rand_like(x)

    x = torch.randn(4, 4)
    compiled = torch.compile(f, backend="lazygen")
    for seed in (3, 4):
        torch.manual_seed(seed)
        got, got_after = compiled(x), torch.rand(3)
        torch.manual_seed(seed)
        want, want_after = f(x), torch.rand(3)
        torch.testing.assert_close(got, want, atol=0, rtol=0)
        torch.testing.assert_close(got_after, want_after, atol=0, rtol=0)


def test_random_ops_on_independent_branches_draw_in_eagers_order_and_are_captured():
    """The compiled graph feeds each random op the live generator and runs them in its own
    order: that order must be the FX graph's. Here the later dropout is the first operand
    of the sum, so operands-first order put it first; the graph was cut and ran eagerly at
    every step (T5's and BART's forward graphs)."""

    def f(x, w):
        a = torch.nn.functional.dropout(x @ w, 0.5)
        b = torch.nn.functional.dropout((x @ w).sin(), 0.3)
        return (b * 2 + a).sum()

    x = torch.randn(4, 8)
    w = torch.randn(8, 8, requires_grad=True)
    w_ref = w.detach().clone().requires_grad_()
    compiled = torch.compile(f, backend="lazygen")
    for seed in (1, 2):
        torch.manual_seed(seed)
        got, got_after = compiled(x, w), torch.rand(3)
        got.backward()
        torch.manual_seed(seed)
        want, want_after = f(x, w_ref), torch.rand(3)
        want.backward()
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(got_after, want_after, atol=0, rtol=0)
        torch.testing.assert_close(w.grad, w_ref.grad)
    assert count("DynamoEagerGraph") == 0, ld.report()
    assert count("DynamoCapture") == 2, ld.report()


def test_dropout_of_a_transposed_tensor_trains_as_eager():
    def f(x, w):
        y = (x @ w).view(4, 2, 4).transpose(0, 1)
        return (torch.nn.functional.dropout(y, 0.3) * torch.arange(32.0).view(2, 4, 4)).sum()

    x = torch.randn(4, 8)
    w = torch.randn(8, 8, requires_grad=True)
    w_ref = w.detach().clone().requires_grad_()
    torch.manual_seed(1)
    torch.compile(f, backend="lazygen")(x, w).backward()
    torch.manual_seed(1)
    f(x, w_ref).backward()
    torch.testing.assert_close(w.grad, w_ref.grad)


def test_inputs_mutated_in_place_and_aliasing_outputs_behave_as_eager():
    def g(x, y):
        x.add_(1)
        return y * 2, x.view(-1)

    x, y = torch.randn(3, 3), torch.randn(3, 3)
    x_ref = x.clone()
    got, got_view = torch.compile(g, backend="lazygen")(x, y)
    want, want_view = g(x_ref, y)
    _close([x, got, got_view], [x_ref, want, want_view])
    got_view.mul_(0)  # the output is a view of the input, as in eager
    assert x.abs().sum() == 0


def test_changing_scalars_do_not_recompile():
    def h(x, s):
        return x * s + 1

    compiled = torch.compile(h, backend="lazygen")
    x = torch.randn(3)
    for s in (0.5, 1.5, 2.5, 3.5, 4.5):
        torch.testing.assert_close(compiled(x, s), h(x, s))
    assert count("DynamoCapture") == 2  # specialised on the first value, then an input
    assert count("DynamoEagerGraph") == 0


def test_dynamic_batch_sizes_capture_once_per_new_size():
    def h(x):
        return (x.relu() * 2).sum(0)

    compiled = torch.compile(h, backend="lazygen")
    for n in (4, 5, 6, 5, 4):
        x = torch.randn(n, 3)
        torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(compiled(x), h(x))
    assert count("DynamoCapture") == 3


def test_an_op_without_a_lazy_kernel_runs_as_an_eager_segment():
    lr.config.set_force_fallback(["special_zeta"])

    def k(x):
        return torch.special.zeta(x.abs() + 2, torch.full_like(x, 1.0)) * 2 + 1

    compiled = torch.compile(k, backend="lazygen")
    x = torch.rand(4)
    for _ in range(3):
        torch.testing.assert_close(compiled(x), k(x))
    assert count("DynamoPartitionedGraph") == 1
    assert count("DynamoEagerSegment") == 1
    assert count("DynamoEagerSegmentRun") == 3
    assert count("aten::special_zeta") == 1  # only while capturing
    assert "eager: special_zeta" in ld.report()


def test_graph_breaks_give_graphs_each_captured():
    def f(x):
        y = x.sin() * 2
        print("", end="")  # a graph break
        return y.cos() + 1

    compiled = torch.compile(f, backend="lazygen")
    x = torch.randn(5)
    for _ in range(2):
        torch.testing.assert_close(compiled(x), f(x))
    assert count("DynamoCapture") == 2


def test_lazy_tensors_in_and_out():
    def f(x, y):
        return (x @ y).relu() + 1

    x, y = torch.randn(3, 3), torch.randn(3, 3)
    got = torch.compile(f, backend="lazygen")(x.to(lr.device()), y.to(lr.device()))
    assert got.device == lr.device()
    torch.testing.assert_close(got.cpu(), f(x, y))


def test_a_graph_without_tensor_arguments_returns_host_tensors():
    """DETR's and YOLOS' loss: ``torch.as_tensor([n])`` then ``clamp`` in a graph of its own
    (a graph break at ``.item()`` follows), whose only tensor is a module constant: its
    result was handed back as a lazy tensor, and the ``.item()`` read the lazy device."""

    def f(n):
        return torch.clamp(torch.as_tensor([n], dtype=torch.float) / 2, min=1)

    compiled = torch.compile(f, backend="lazygen")
    for n in (3, 5):
        got = compiled(n)
        assert got.device.type == "cpu"
        torch.testing.assert_close(got, f(n))
    assert count("aten::_local_scalar_dense") == 0
    assert count("DynamoEagerGraph") == 0


def test_random_ops_in_a_graph_without_tensor_arguments_draw_at_every_call():
    """A ``randn`` with no tensor argument ran on the host at capture and was replayed as a
    constant: every call returned the first call's numbers."""

    def f(k):
        return torch.randn(3) * k

    compiled = torch.compile(f, backend="lazygen")
    torch.manual_seed(0)
    got = [compiled(2), compiled(2), torch.rand(2)]
    torch.manual_seed(0)
    want = [f(2), f(2), torch.rand(2)]
    for g, w in zip(got, want, strict=True):
        assert g.device.type == "cpu"
        torch.testing.assert_close(g, w, atol=0, rtol=0)
    assert count("DynamoEagerGraph") == 0


def test_options_choose_the_lazygen_backend_and_unknown_ones_are_refused():
    f = torch.compile(lambda x: x + 1, backend="lazygen", options={"backend": "torchscript"})
    torch.testing.assert_close(f(torch.ones(2)), torch.full((2,), 2.0))
    g = torch.compile(lambda x: x + 1, backend="lazygen", options={"colour": "blue"})
    with pytest.raises(Exception, match="unknown torch.compile option"):
        g(torch.ones(2))


@pytest.mark.parametrize("mode", ["reduce-overhead", "max-autotune"])
def test_inductors_modes_are_ignored_with_a_warning(mode):
    """``torch.compile(mode=...)`` hands the backend ``mode=``; it failed with a TypeError."""
    f = torch.compile(lambda x: x * 2, backend="lazygen", mode=mode)
    with pytest.warns(UserWarning, match=f"mode='{mode}'.* is ignored"):
        got = f(torch.ones(2))
    torch.testing.assert_close(got, torch.full((2,), 2.0))


def test_attention_is_captured_without_eager_segments():
    """aot_autograd's graphs call the CPU flash-attention ops; they have lazy kernels, so
    a transformer layer is one lazy graph each way (it was split around 4 eager segments)."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    x = torch.randn(2, 5, 8)
    eager_layer = copy.deepcopy(layer)
    compiled = torch.compile(layer, backend="lazygen")
    for _ in range(2):
        got, want = compiled(x), eager_layer(x)
        got.sum().backward()
        want.sum().backward()
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    for a, b in zip(layer.parameters(), eager_layer.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, atol=1e-5, rtol=1e-5)
    assert count("DynamoEagerSegment") == 0, ld.report()
    assert count("DynamoCapture") == 2, ld.report()  # forward and backward, once each


@pytest.mark.slow
def test_the_inductor_backend_compiles_training_graphs_instead_of_running_them_eagerly():
    """Inductor compiles with example inputs: the first call's arguments must outlive the
    compile, and aot_autograd's runtime mode must not leak into Inductor's own tracing
    (both made every training graph run eagerly, reported as a compile failure)."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 4)
    reference = copy.deepcopy(layer)
    compiled = torch.compile(layer, backend="lazygen", options={"backend": "inductor"})
    x = torch.randn(3, 8)
    got, want = compiled(x), reference(x)
    got.sum().backward()
    want.sum().backward()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(layer.weight.grad, reference.weight.grad)
    assert count("DynamoEagerGraph") == 0, ld.report()
    assert count("DynamoCapture") == 2, ld.report()


def test_factories_in_a_training_graph_are_traced_as_lazy_tensors_not_run_eagerly():
    """A training graph's first call runs under aot_autograd's dispatch mode, which hid
    the functional wrapper of factory results (the device kernels took the mode's
    redispatch for a functionalization kernel's): T5's causal mask (``arange`` ... ``view``)
    and a ``zeros`` filled in place went through the eager fallback and the forward graph
    ran eagerly at every step."""

    class CausalMask(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(6, 6)

        def forward(self, x):
            n = x.shape[-1]
            mask = torch.arange(n)[:, None] >= torch.arange(n)[None, :]
            bias = torch.zeros(1, n, n)
            bias.masked_fill_(~mask.view(1, n, n), -1e4)
            return (self.linear(x) + bias).softmax(-1)

    torch.manual_seed(0)
    model = CausalMask()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="lazygen")
    x = torch.randn(2, 6, 6)
    for _ in range(2):
        got, want = compiled(x), reference(x)
        (got * x).sum().backward()
        (want * x).sum().backward()
        torch.testing.assert_close(got, want)
    torch.testing.assert_close(model.linear.weight.grad, reference.linear.weight.grad)
    fallbacks = [n for n in lr.metrics.counter_names() if n.startswith("aten::")]
    assert fallbacks == [], ld.report()
    assert count("DynamoEagerGraph") == count("DynamoPartitionedGraph") == 0, ld.report()
    assert count("DynamoCapture") == 2, ld.report()


def _segments_summed(x: torch.Tensor, ends: list[int]) -> torch.Tensor:
    out = torch.zeros_like(x)
    start = 0
    for end in ends:
        out[start:end] = x[start:end].sum()
        start = end
    return out


# Each segment of ``x`` replaced by its sum, the boundaries read on the host (as MoE experts
# loops do): custom ops, opaque to Dynamo, traced op by op by a capture.
@torch.library.custom_op("lazygen_test::segment_sums", mutates_args=())
def _segment_sums(x: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
    return _segments_summed(x, ends.tolist())


@torch.library.custom_op("lazygen_test::segment_sums_by_item", mutates_args=())
def _segment_sums_by_item(x: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
    return _segments_summed(x, [int(ends[i].item()) for i in range(len(ends))])


for _op in (_segment_sums, _segment_sums_by_item):
    _op.register_fake(lambda x, ends: torch.empty_like(x))


@pytest.mark.parametrize("op", ["segment_sums", "segment_sums_by_item"])
def test_an_op_reading_a_graph_input_on_the_host_is_not_replayed_with_that_value(op):
    """Reading an argument's values on the host while capturing (``tolist`` of an input,
    no pending IR to sync; or ``item()``) baked that call's values into the replayed graph:
    Mixtral's experts backward (transformers' grouped_mm_fallback_backward) then computed
    every later step's gradients with the first step's token counts."""
    segment_sums = getattr(torch.ops.lazygen_test, op)

    def f(x, ends):
        return segment_sums(x * 2, ends) + 1

    compiled = torch.compile(f, backend="lazygen")
    x = torch.arange(6.0)
    for ends in ([2, 6], [4, 6], [1, 3]):
        ends = torch.tensor(ends)
        torch.testing.assert_close(compiled(x, ends), f(x, ends))


def test_an_inference_graph_writing_its_inputs_writes_the_callers_tensors_every_call():
    """Under no_grad, aot_autograd keeps an inference graph's in-place writes as ``copy_``
    nodes (``keep_inference_input_mutations``): the capture finds the arguments written and
    the replay writes their new values into the caller's tensors, at every call."""

    @torch.no_grad()
    def update(buf, other, x):
        buf.mul_(0.5).add_(x)
        other.copy_(x * 2)
        return buf.sum(), other

    state = [torch.randn(4, 3), torch.zeros(4, 3)]
    ref = [t.clone() for t in state]
    run = torch.compile(update, backend="lazygen")
    held = list(state)
    for i in range(3):
        x = torch.full((4, 3), float(i))
        got_sum, got_other = run(*state, x)
        want_sum, want_other = update(*ref, x)
        _close([state[0], state[1], got_sum], [ref[0], ref[1], want_sum])
        assert got_other is state[1]  # returned as eager returns it: the argument itself
    assert held[0] is state[0] and held[1] is state[1]
    assert count("DynamoEagerGraph") == 0
    assert count("DynamoCapture") == 1


def test_a_captured_graph_that_mutates_an_argument_replays_the_write():
    """The capture itself sees an argument written in place (its lazy stand-in reads a new
    value), whatever produced the FX graph: the replay writes it back."""
    import lazygen.dynamo.compiled as compiled

    def f(x, y):
        torch.ops.aten.add_.Tensor(x, y)
        return (torch.ops.aten.mul.Tensor(x, 3),)

    gm = torch.fx.symbolic_trace(f)
    graph = compiled.CompiledGraph(gm, ld.device_for(None), "mutating")
    x, y = torch.randn(5), torch.randn(5)
    x_ref = x.clone()
    for _ in range(3):
        (got,) = graph([x, y])
        (want,) = f(x_ref, y)
        _close([x, got], [x_ref, want])
    assert count("DynamoCapture") == 1


def _sliding_chunks(x: torch.Tensor) -> torch.Tensor:
    """Longformer's ``_chunk``: overlapping windows by ``as_strided`` with strides read
    from a view of a transpose (aot_autograd keeps them as views: non-contiguous)."""
    x = x.transpose(0, 1)
    h = x.view(x.size(0), x.size(1) // 4, 4, x.size(2))
    size = list(h.size())
    size[1] = size[1] * 2 - 1
    stride = list(h.stride())
    stride[1] = stride[1] // 2
    chunks = h.as_strided(size=size, stride=stride)
    return torch.einsum("bcxd,bcyd->bcxy", chunks, chunks).pow(2).sum()


def test_as_strided_of_a_non_contiguous_view_reads_eagers_storage():
    """``as_strided`` addresses its input's storage as eager lays it out; lazy tensors hold
    a view's elements contiguously, so the capture rebuilds eager's storage first (found
    training Longformer and LED under torch.compile: their attention was wrong)."""
    x = torch.randn(8, 2, 3)
    xe = x.clone().requires_grad_()
    want = _sliding_chunks(xe)
    want.backward()
    xc = x.clone().requires_grad_()
    got = torch.compile(_sliding_chunks, backend="lazygen")(xc)
    got.backward()  # the backward graph's as_strided_scatter reads eager's storage too
    _close([got, xc.grad], [want, xe.grad])
    assert count("DynamoEagerGraph") == 0

    def scatter(base, src):
        return torch.as_strided_scatter(base.t(), src, (2, 2), (1, 4))

    base, src = torch.randn(4, 6), torch.randn(2, 2)
    _close(torch.compile(scatter, backend="lazygen")(base, src), scatter(base, src))


def test_as_strided_of_a_view_over_changing_lengths_reads_eagers_storage():
    """With dynamic sizes the FX graph reads the view's strides itself (``sym_stride``)
    and its example values' layouts are symbolic: both were taken from the lazy tensor
    (contiguous), so the windows held other elements from the second length on."""
    compiled = torch.compile(_sliding_chunks, backend="lazygen")
    for length in (8, 12, 16, 20):
        x = torch.randn(length, 2, 3)
        xe = x.clone().requires_grad_()
        want = _sliding_chunks(xe)
        want.backward()
        xc = x.clone().requires_grad_()
        got = compiled(xc)
        got.backward()
        _close([got, xc.grad], [want, xe.grad], tol=1e-4)
    assert count("DynamoEagerGraph") == 0


def _chunks(x: torch.Tensor) -> torch.Tensor:
    """Longformer's ``_chunk`` of its argument, returned: an overlapping view of it."""
    h = x.view(x.size(0), x.size(1) // 4, 4, x.size(2))
    size, stride = list(h.size()), list(h.stride())
    size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
    return h.as_strided(size=size, stride=stride)


def test_a_view_of_an_argument_returned_over_changing_lengths_is_eagers_view():
    """aot_autograd rebuilds an output that views an argument from the argument, with the
    returned tensor's sizes and strides once they are symbolic: the contiguous result
    lazygen returned made it address past the argument's storage (``setStorage ... out of
    bounds``, LED under torch.compile from its second sequence length)."""
    compiled = torch.compile(_chunks, backend="lazygen")
    for length in (8, 12, 16):
        x = torch.randn(2, length, 3)
        got, want = compiled(x), _chunks(x)
        assert (got.stride(), got.storage_offset()) == (want.stride(), want.storage_offset())
        _close([got], [want])
    assert count("DynamoEagerGraph") == 0


@pytest.mark.slow
def test_longformer_attention_over_changing_lengths_equals_eager():
    """LED's sliding-window self-attention: its padded diagonals come out of a graph as
    a view and a transpose of that view, both outputs, which aot_autograd rebuilds from
    each other with the returned strides once the sizes are symbolic (wrong values from
    the fourth length on, when lazygen returned both contiguous)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.LEDConfig(
        vocab_size=32, d_model=32, encoder_attention_heads=2, attention_window=[4], encoder_layers=1
    )
    model = transformers.LEDForConditionalGeneration(config)
    attention = model.led.encoder.layers[0].self_attn.longformer_self_attn.eval()

    def f(hidden, mask):
        masked = mask < 0
        out = attention(
            hidden,
            attention_mask=mask,
            is_index_masked=masked,
            is_index_global_attn=torch.zeros_like(masked),
            is_global_attn=False,
        )[0]
        return (out * torch.arange(out.numel()).view(out.shape).cos()).sum()

    compiled = torch.compile(f, backend="lazygen")
    for length in (8, 12, 16, 20):
        hidden, mask = torch.randn(2, length, 32), torch.zeros(2, length)
        results = []
        for fn in (f, compiled):
            attention.zero_grad()
            h = hidden.clone().requires_grad_()
            out = fn(h, mask)
            out.backward()
            results.append([out, h.grad, attention.query.weight.grad])
        _close(results[1], results[0], tol=1e-4)
    assert count("DynamoEagerGraph") == 0


def test_as_strided_reading_outside_its_view_runs_the_graph_eagerly_and_says_why():
    def outside(x):  # reads elements of x that the slice leaves out
        return x[:, :2].as_strided((3, 3), (4, 1)) * 2

    x = torch.randn(3, 4)
    _close(torch.compile(outside, backend="lazygen")(x), outside(x))
    assert count("DynamoEagerGraph") == 1
    assert "reads storage its input" in ld.report()


def test_flat_outputs_with_arguments_passed_through_are_rebuilt_in_order():
    """A graph returning an argument as it is between its results: the replay builds the
    flat tuple itself (no pytree rebuild) with each output in its place."""

    def f(x, y):
        return y * 2, x, x + 1

    x, y = torch.randn(3), torch.randn(3)
    graph = CompiledGraph(make_fx(f)(x, y), ld.device_for(None), "passing")
    for _ in range(2):  # the capture's call, then a replay
        got = graph([x, y])
        assert type(got) is tuple and len(got) == 3
        assert got[1] is x
        _close(list(got), [y * 2, x, x + 1])
    (replay,) = graph.entries.values()
    assert replay.container is tuple and replay.flat is None


def test_numpy_integer_arithmetic_traced_by_dynamo_runs_lazily():
    """Dynamo traces numpy calls on Python ints as tensor ops: Reformer pads its input to
    ``np.lcm`` of two chunk lengths and takes the length ``%`` it (``lcm``,
    ``remainder.Scalar_Tensor``), which ran as eager segments until the op list had them."""
    import numpy as np

    def pad_length(x):
        multiple = np.lcm(4, 6)
        return x.sum() + (x.shape[-1] % multiple) + np.gcd(8, 12)

    assert torch.compile(pad_length, backend="lazygen")(torch.ones(2, 10)) == 34
    fallbacks = [k for k in lr.metrics.counters() if k.startswith("aten::")]
    assert not fallbacks, fallbacks
    assert count("DynamoEagerSegment") == 0
