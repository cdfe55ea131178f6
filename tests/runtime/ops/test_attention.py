"""scaled_dot_product_attention: one fused lazy node forward and one backward where the CPU
would fuse, ATen's math path elsewhere; values and gradients equal eager either way."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from support.training import assert_as_accurate_as_eager
from torch import nn

import lazygen.runtime as lr

LAZY = "lazygen"
FUSED = "lazy::attention"
FUSED_BACKWARD = "lazy::attention_backward"


def _attention(device, dtype, mask=None, mask_grad=False, **options):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, dtype=dtype).to(device).requires_grad_() for _ in "qkv")
    leaves = [q, k, v]
    if mask is not None:
        mask = mask.to(device).detach()
        if mask_grad:
            leaves.append(mask.requires_grad_())
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **options)
    weights = torch.arange(out.numel(), dtype=dtype).reshape(out.shape) / out.numel()
    (out * weights.to(device)).sum().backward()
    return [out.detach().cpu()] + [t.grad.cpu() for t in leaves]


def _count(name):
    return lr.metrics.counter_value(name) or 0


def _assert_equal(want, got, dtype):
    tolerance = {} if dtype == torch.float64 else {"atol": 1e-6, "rtol": 1e-5}
    for expected, actual in zip(want, got, strict=True):
        torch.testing.assert_close(actual, expected, **tolerance)


MASKS = {
    "none": lambda dtype: None,
    "float_2d": lambda dtype: torch.randn(5, 5, dtype=dtype),
    "bool_2d": lambda dtype: torch.rand(5, 5) > 0.3,
    "float_4d": lambda dtype: torch.randn(2, 1, 5, 5, dtype=dtype),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("mask", sorted(MASKS))
def test_fused_where_the_cpu_fuses_and_equal_to_eager(mask, dtype, fresh_metrics):
    torch.manual_seed(1)
    attn_mask = MASKS[mask](dtype)
    want = _attention("cpu", dtype, attn_mask)
    got = _attention(LAZY, dtype, attn_mask)
    _assert_equal(want, got, dtype)
    assert _count(FUSED) == 1 and _count(FUSED_BACKWARD) == 1
    assert not [name for name in lr.metrics.counter_names() if name.startswith("aten::")]


def test_causal_is_fused(fresh_metrics):
    _assert_equal(
        _attention("cpu", torch.float64, is_causal=True),
        _attention(LAZY, torch.float64, is_causal=True),
        torch.float64,
    )
    assert _count(FUSED) == 1


@pytest.mark.parametrize(
    "case",
    ["mask_3d", "mask_requires_grad", "scale"],
)
def test_math_path_where_the_cpu_does_not_fuse(case, fresh_metrics):
    """A 3-D mask and a mask that needs a gradient are not fused on the CPU either; an
    explicit scale is (the CPU fuses it), and must equal eager too."""
    dtype = torch.float64
    torch.manual_seed(2)
    mask = (
        torch.randn(3, 5, 5, dtype=dtype) if case == "mask_3d" else torch.randn(5, 5, dtype=dtype)
    )
    options = {"mask_grad": case == "mask_requires_grad"}
    if case == "scale":
        options["scale"] = 0.3
    _assert_equal(
        _attention("cpu", dtype, mask, **options), _attention(LAZY, dtype, mask, **options), dtype
    )
    assert _count(FUSED) == (1 if case == "scale" else 0)


def test_dropout_takes_the_math_path(fresh_metrics):
    q = torch.randn(2, 3, 5, 4, device=LAZY)
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert out.shape == (2, 3, 5, 4) and _count(FUSED) == 0
    lr.mark_step()


def test_the_bias_gradient_of_the_fused_op_equals_the_math_ops():
    """Called directly, the fused op's backward also gives the attention bias's gradient."""
    torch.manual_seed(3)
    tensors = [torch.randn(2, 3, 5, 4, dtype=torch.float64) for _ in "qkv"]
    tensors.append(torch.randn(1, 3, 5, 5, dtype=torch.float64))

    def grads(device, op):
        leaves = [t.to(device).detach().requires_grad_() for t in tensors]
        out = op(*leaves)[0]
        (out * out).sum().backward()
        return [t.grad.cpu() for t in leaves]

    want = grads("cpu", torch.ops.aten._scaled_dot_product_attention_math)
    got = grads(LAZY, torch.ops.aten._scaled_dot_product_fused_attention_overrideable)
    _assert_equal(want, got, torch.float64)


def test_invalid_arguments_raise_atens_error():
    q = torch.randn(2, 3, 5, 4, device=LAZY)
    with pytest.raises(RuntimeError, match="same dtype|dtype"):
        F.scaled_dot_product_attention(q, q.double(), q)


def test_transformer_decoder_training_equals_eager(fresh_metrics):
    def train(device, dtype=torch.float32):
        torch.manual_seed(0)
        layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
        model = nn.TransformerDecoder(layer, num_layers=2).to(dtype).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        tgt, memory = torch.randn(2, 4, 8).to(device, dtype), torch.randn(2, 3, 8).to(device, dtype)
        mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=dtype).to(device)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = model(tgt, memory, tgt_mask=mask).square().mean()
            loss.backward()
            opt.step()
            if device != "cpu":
                lr.mark_step()
            losses.append(loss.item())
        return [torch.tensor(losses)] + [p.detach().cpu() for p in model.parameters()]

    eager = train("cpu")
    got = train(LAZY)
    # Fused attention and BLAS kernels round differently on AVX2 and AVX-512 CPUs: lazy must
    # be as close to a float64 run as eager is, not equal to one machine's float32 bits.
    assert_as_accurate_as_eager(got, eager, lambda: train("cpu", torch.float64))
    assert _count(FUSED) == 3 * 2 * 2  # steps x layers x (self + cross attention)


@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "mask"])
def test_the_cpu_flash_ops_called_directly_are_one_node_each_way(masked, fresh_metrics):
    """Graphs captured by Dynamo/aot_autograd on the CPU call the CPU flash kernels
    directly; on the lazy device each is one node, equal to the CPU's."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 8) for _ in range(3))
    mask = torch.randn(5, 5) if masked else None
    forward = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    backward = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default
    out, lse = forward(q, k, v, 0.0, True, attn_mask=mask, scale=0.3)
    grad = torch.randn_like(out)
    grads = backward(grad, q, k, v, out, lse, 0.0, True, attn_mask=mask, scale=0.3)
    lazy = [t.to(LAZY) for t in (q, k, v, grad)]
    lazy_mask = None if mask is None else mask.to(LAZY)
    lazy_out, lazy_lse = forward(*lazy[:3], 0.0, True, attn_mask=lazy_mask, scale=0.3)
    lazy_grads = backward(
        lazy[3], *lazy[:3], lazy_out, lazy_lse, 0.0, True, attn_mask=lazy_mask, scale=0.3
    )
    for want, got in zip((out, lse, *grads), (lazy_out, lazy_lse, *lazy_grads), strict=True):
        torch.testing.assert_close(got.cpu(), want)
    assert _count("lazy::attention") == 1
    assert _count("lazy::attention_backward") == 1


def test_the_cpu_flash_ops_refuse_dropout():
    q = torch.randn(1, 2, 3, 4).to(LAZY)
    with pytest.raises(RuntimeError, match="dropout"):
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(q, q, q, 0.5)


def test_compiled_attention_on_the_lazy_device_is_fused_too(fresh_metrics):
    """torch.compile traces with fake tensors, whose kernel choice is always the math path;
    the choice is asked of real CPU tensors, so that a compiled step gets the fused op as
    the uncompiled one does (it got softmax, bmm and masking ops: issue 48)."""
    torch._dynamo.reset()
    torch.manual_seed(1)
    want = _attention("cpu", torch.float32)
    compiled = torch.compile(_attention, backend="lazygen")
    got = compiled(LAZY, torch.float32)
    _assert_equal(want, got, torch.float32)
    assert _count(FUSED) == 1 and _count(FUSED_BACKWARD) == 1
    assert not [name for name in lr.metrics.counter_names() if "softmax" in name]


def test_compiled_attention_is_captured_whole_not_run_op_by_op(fresh_metrics):
    """The fused op's philox seed and offset are graph scalars, not device data uploaded at
    each call: the capture took such fresh data from an op tagged as seeded for a random
    draw and split the compiled graph around every attention call, run op by op at each
    step (an encoder's captured training step: issue 48)."""
    torch._dynamo.reset()

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v).sum()

    compiled = torch.compile(attend, backend="lazygen")
    torch.manual_seed(3)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in "qkv")
    lazy = [t.to(LAZY).requires_grad_() for t in (q, k, v)]
    for _ in range(2):
        got = compiled(*lazy)
        got.backward()
    torch.testing.assert_close(got.cpu(), attend(q, k, v))
    assert _count(FUSED) == 1  # traced once, at the capture
    assert _count("DynamoEagerSegment") == 0 and _count("DynamoEagerSegmentRun") == 0


def test_compiled_attention_with_symbolic_sizes_runs_on_the_math_path(fresh_metrics):
    """Under ``torch.compile(dynamic=True)`` the sizes are symbols, which cannot key the
    choice nor size a CPU stand-in (it raised ``unhashable type: non-nested SymInt`` inside
    Dynamo): such a graph takes the math path, right for every length it serves."""
    torch._dynamo.reset()

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    compiled = torch.compile(attend, backend="lazygen", dynamic=True)
    for length in (6, 9):
        torch.manual_seed(length)
        q, k, v = (torch.randn(2, 3, length, 4, dtype=torch.float64) for _ in "qkv")
        want = attend(q.requires_grad_(), k, v)
        want.sum().backward()
        lazy_q = q.detach().to(LAZY).requires_grad_()
        got = compiled(lazy_q, k.to(LAZY), v.to(LAZY))
        got.sum().backward()
        torch.testing.assert_close(got.cpu(), want.detach())
        torch.testing.assert_close(lazy_q.grad.cpu(), q.grad)
