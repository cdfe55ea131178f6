"""The neutral attention ops (``lazygen::attention``, ``lazygen::attention_backward``, issue
#39): their torch definition, their reference decomposition into plain ops as eager as
eager's own float32 error allows, the decomposition chosen by a lowering context
(``decomposed_ops``), and IR dumps that name them."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import lazygen.runtime as lr
from lazygen.runtime.backend_interface import make_backend
from lazygen.runtime.backends import BUILTIN
from lazygen.runtime.backends.torchscript.backend import TorchScriptBackend
from lazygen.runtime.backends.torchscript.lowering import TSLoweringContext
from lazygen.runtime.ops import attention_reference

CPU_FLASH = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
CPU_FLASH_BACKWARD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default
NEUTRAL = ("lazygen::attention", "lazygen::attention_backward")
INDEX = 5  # a device index of its own for the decomposing backend


class DecomposingContext(TSLoweringContext):
    decomposed_ops = frozenset(NEUTRAL)


class DecomposingBackend(TorchScriptBackend):
    """TorchScript whose graphs hold attention as its reference decomposition."""

    name = "decomposing-attention"

    def lowering_context(self, device):
        return DecomposingContext(device)


def _inputs(mask: str, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    # values spread as OpInfo's samples are: rounding errors that matter
    q, k, v, grad = (
        torch.rand(2, 3, n, 8, generator=generator, dtype=torch.float64) * 6 - 3
        for n in (5, 7, 7, 5)
    )
    attn_mask = None
    if mask == "additive":
        attn_mask = torch.rand(5, 7, generator=generator, dtype=torch.float64) * 6 - 3
    elif mask == "broadcast_4d":
        attn_mask = torch.rand(2, 1, 5, 7, generator=generator, dtype=torch.float64) * 6 - 3
    return q, k, v, grad, attn_mask


def _flash(q, k, v, grad, mask, is_causal, scale):
    """Eager's CPU kernels: output, logsumexp and the three gradients."""
    out, lse = CPU_FLASH(q, k, v, 0.0, is_causal, attn_mask=mask, scale=scale)
    grads = CPU_FLASH_BACKWARD(grad, q, k, v, out, lse, 0.0, is_causal, attn_mask=mask, scale=scale)
    return [out, lse, *grads]


def assert_as_accurate_as_eager(got, eager, reference):
    """Each float32 value no further from the float64 run than 4x eager's own distance,
    plus 2 units in the last place of its largest entry (eager's errors here are a few
    of those: their ratio alone is noise). 32 seeds x these cases: at most 4.04x."""
    for index, (lazy, want, ref) in enumerate(zip(got, eager, reference, strict=True)):
        ulp = torch.finfo(torch.float32).eps * ref.abs().max().item()
        lazy_error = (lazy.double() - ref).abs().max().item()
        eager_error = (want.double() - ref).abs().max().item()
        assert (
            lazy_error <= 4 * eager_error + 2 * ulp
        ), f"value {index}: {lazy_error:.3g} from the float64 run, eager {eager_error:.3g}"


CASES = {
    "plain": ("none", False, None),
    "causal": ("none", True, None),
    "mask": ("additive", False, None),
    "mask_4d_causal_scale": ("broadcast_4d", True, 0.3),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_eager_reference_is_as_accurate_as_eager(case):
    """The decomposition run on CPU tensors, in float32, is as close to a float64 run as
    eager's fused kernels are (forward, logsumexp and gradients)."""
    mask, is_causal, scale = CASES[case]
    tensors64 = _inputs(mask)
    tensors32 = [None if t is None else t.float() for t in tensors64]
    reference = _flash(*tensors64, is_causal, scale)
    eager = _flash(*tensors32, is_causal, scale)
    q, k, v, grad, attn_mask = tensors32
    out, lse = attention_reference.forward(q, k, v, attn_mask, is_causal, scale)
    grads = attention_reference.backward(grad, q, k, v, attn_mask, is_causal, scale)
    assert out.dtype == torch.float32 and lse.dtype == torch.float32 and lse.shape == (2, 3, 5)
    assert_as_accurate_as_eager([out, lse, *grads], eager, reference)


def test_the_reference_in_float64_equals_the_cpu_kernels():
    q, k, v, grad, mask = _inputs("additive")
    want = _flash(q, k, v, grad, mask, True, None)
    got = [*attention_reference.forward(q, k, v, mask, True), None, None, None]
    got[2:] = attention_reference.backward(grad, q, k, v, mask, True)
    for expected, actual in zip(want, got, strict=True):
        torch.testing.assert_close(actual, expected, rtol=1e-12, atol=1e-12)


def test_the_neutral_ops_are_torch_ops():
    """``torch.ops.lazygen.attention``: the CPU's flash kernel on 4-D CPU tensors (eager's
    bits), the reference elsewhere, meta kernels for shape inference."""
    q, k, v, grad, mask = (None if t is None else t.float() for t in _inputs("additive"))
    out, lse = torch.ops.lazygen.attention(q, k, v, mask, is_causal=True)
    want = CPU_FLASH(q, k, v, 0.0, True, attn_mask=mask)
    assert torch.equal(out, want[0]) and torch.equal(lse, want[1])
    grads = torch.ops.lazygen.attention_backward(grad, q, k, v, out, lse, mask, is_causal=True)
    want_grads = CPU_FLASH_BACKWARD(grad, q, k, v, out, lse, 0.0, True, attn_mask=mask)
    assert all(torch.equal(g, w) for g, w in zip(grads, want_grads, strict=True))
    three_d = torch.ops.lazygen.attention(q[0], k[0], v[0])  # off the flash kernel's scope
    torch.testing.assert_close(three_d[0], CPU_FLASH(q, k, v, 0.0, False)[0][0])
    meta = torch.ops.lazygen.attention(*(t.to("meta") for t in (q, k, v)))
    assert meta[0].shape == (2, 3, 5, 8) and meta[1].shape == (2, 3, 5)
    half = torch.ops.lazygen.attention(*(t.to("meta", torch.bfloat16) for t in (q, k, v)))
    assert half[0].dtype == torch.bfloat16 and half[1].dtype == torch.float32


_DECOMPOSING = []  # one backend for the module: an index holding tensors keeps its backend


@pytest.fixture
def decomposing_device():
    if not _DECOMPOSING:
        _DECOMPOSING.append(DecomposingBackend())
    lr.set_device_backend(INDEX, _DECOMPOSING[0])
    return f"lazygen:{INDEX}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_context_that_decomposes_runs_the_reference(case, decomposing_device, fresh_metrics):
    """A backend whose context lists the neutral ops in ``decomposed_ops`` gets the same
    nodes, lowered as plain ops (no flash kernel in its graphs), as accurate as eager.
    (The backward node is made by calling the CPU kernel's backward on lazy tensors, as
    graphs captured by Dynamo do: autograd runs on index 0 only.)"""
    mask, is_causal, scale = CASES[case]
    tensors64 = _inputs(mask, seed=1)
    tensors32 = [None if t is None else t.float() for t in tensors64]
    reference = _flash(*tensors64, is_causal, scale)
    eager = _flash(*tensors32, is_causal, scale)
    q, k, v, grad, attn_mask = (None if t is None else t.to(decomposing_device) for t in tensors32)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask, is_causal=is_causal, scale=scale)
    out_direct, lse = CPU_FLASH(q, k, v, 0.0, is_causal, attn_mask=attn_mask, scale=scale)
    grads = CPU_FLASH_BACKWARD(
        grad, q, k, v, out_direct, lse, 0.0, is_causal, attn_mask=attn_mask, scale=scale
    )
    lr.mark_step(decomposing_device)
    graph = lr.debug.last_graph()
    assert "flash_attention" not in graph and "aten::logsumexp" in graph, graph
    assert_as_accurate_as_eager([t.cpu() for t in (out, lse, *grads)], eager, reference)
    assert lr.metrics.counter_value("lazy::attention") == 2
    assert lr.metrics.counter_value("lazy::attention_backward") == 1


def test_ir_dumps_name_the_neutral_ops(fresh_metrics):
    q = torch.randn(2, 3, 5, 8, device="lazygen", requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q)
    assert "lazygen::attention" in lr.debug.dump_ir([out])
    out.sum().backward()
    assert "lazygen::attention_backward" in lr.debug.dump_ir([q.grad])
    lr.mark_step()
    assert lr.metrics.counter_value("lazy::attention") == 1
    # the names counted before the neutral ops answer too
    assert lr.metrics.counter_value("lazy::_scaled_dot_product_fused_attention_overrideable") == 1


def test_the_neutral_op_called_on_lazy_tensors_is_one_node(fresh_metrics):
    """``torch.ops.lazygen.attention`` in a user's code (or a captured graph) on lazy
    tensors: the same node as ``scaled_dot_product_attention`` makes, eager's results."""
    q, k, v, grad, mask = (None if t is None else t.float() for t in _inputs("additive"))
    want = _flash(q, k, v, grad, mask, True, None)
    lazy = [None if t is None else t.to("lazygen") for t in (q, k, v, grad, mask)]
    out, lse = torch.ops.lazygen.attention(*lazy[:3], lazy[4], is_causal=True)
    grads = torch.ops.lazygen.attention_backward(
        lazy[3], *lazy[:3], out, lse, lazy[4], is_causal=True
    )
    for expected, actual in zip(want, (out, lse, *grads), strict=True):
        torch.testing.assert_close(actual.cpu(), expected)
    assert lr.metrics.counter_value("lazy::attention") == 1
    assert lr.metrics.counter_value("lazy::attention_backward") == 1
    assert not [name for name in lr.metrics.counter_names() if name.startswith("aten::")]


@pytest.mark.parametrize("backend", ["torchscript", "fx", "inductor"])
def test_torch_kernel_backends_run_the_cpu_flash_kernels(backend):
    """The built-in backends that run torch's kernels lower the neutral ops to the CPU's
    flash kernels, not to a call of their Python torch.library implementation (which, in a
    TorchScript graph run on the inter-op pool, would wait for the GIL)."""
    ctx = make_backend(backend, BUILTIN).lowering_context(torch.device("cpu"))
    assert not ctx.decomposes("lazygen::attention")
    if backend == "torchscript":
        inputs = [ctx.graph.addInput() for _ in range(3)]
        for value in inputs:
            value.setType(torch._C.TensorType.get())
    else:
        inputs = [ctx.graph.placeholder(name) for name in "qkv"]
    none, causal, scale = ctx.constant(None), ctx.constant(True), ctx.constant(None)
    outputs = ctx.call(
        "lazygen::attention", [*inputs, none], {"is_causal": causal, "scale": scale}, 2
    )
    assert len(outputs) == 2
    text = str(ctx.graph)
    assert "_scaled_dot_product_flash_attention_for_cpu" in text and "lazygen" not in text
