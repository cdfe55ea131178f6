"""A backend refuses ops inside a graph (``Backend.refused_ops``, ``refusals``): on its
device each such call cuts the graph and runs eagerly, listed as refused in the fallback
report; other devices of the process keep tracing the op; bad declarations are errors
naming the backend."""

from __future__ import annotations

import gc
import warnings

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime.backends.torchscript.backend import TorchScriptBackend
from lazygen.runtime.dispatch import refusals

aten = torch.ops.aten
# Device indices no other test file gives a backend (``set_device_backend`` grows the count
# past 8 for them): an index holding tensors of one backend cannot take another.
INDEX = 12
DEVICE = f"lazygen:{INDEX}"


class RefusingBackend(TorchScriptBackend):
    """TorchScript, except that it cannot run ``relu`` at all, nor ``mm`` in float64."""

    name = "refusing"

    def refused_ops(self) -> dict:
        return {
            aten.relu.default: None,
            "mm": lambda op, args, kwargs: args[0].dtype == torch.float64,
        }


@pytest.fixture(scope="module")
def refusing():
    backend = RefusingBackend()
    lr.set_device_backend(INDEX, backend)
    yield backend
    lr.mark_step()
    gc.collect()


@pytest.fixture(autouse=True)
def _fresh():
    lr.mark_step()
    lr.metrics.reset()
    yield
    lr.mark_step()


def _mlp(device, dtype=torch.float32):
    torch.manual_seed(0)
    x, w = torch.randn(4, 3, dtype=dtype), torch.randn(3, 3, dtype=dtype)
    return ((x.to(device) @ w.to(device)).relu() * 2).sum(0)


def test_a_refused_op_cuts_the_graph_and_runs_eagerly(refusing):
    result = _mlp(DEVICE)
    lr.mark_step()
    torch.testing.assert_close(result.cpu(), _mlp("cpu"))
    report = lr.metrics.fallback_report()
    assert [e.op for e in report.refused] == ["aten::relu"]
    (entry,) = report.refused
    assert entry.count == 1 and entry.graph_cuts == 1  # it read mm's pending result
    assert "test_refusals.py" in entry.first_source
    assert report.fallbacks == ()  # not "not in the op list": it is, the backend refused it
    assert "Ops the backend refused in a graph (run eagerly): 1" in str(report)
    assert lr.metrics.counter_value("lazy::mm") == 1  # mm traced (float32)
    assert lr.metrics.counter_value("aten::relu") == 1
    assert lr.metrics.counter_value("UncachedCompile") == 2  # mm's graph, then mul/sum's


def test_a_predicate_refuses_some_calls_only(refusing):
    _mlp(DEVICE, torch.float64).cpu()
    assert lr.metrics.counter_value("lazy::mm") is None
    assert {e.op for e in lr.metrics.fallback_report().refused} == {"aten::mm", "aten::relu"}


def test_other_devices_keep_tracing_the_op(refusing):
    result = _mlp("lazygen:0")
    lr.mark_step()
    torch.testing.assert_close(result.cpu(), _mlp("cpu"))
    assert lr.metrics.counter_value("lazy::relu") == 1
    assert lr.metrics.fallback_report().refused == ()


def test_refusals_do_not_warn_about_graph_cuts(refusing):
    """The many-cuts warning is about ops missing from the op list: a refusal is the
    backend's declared choice."""
    assert lr.metrics.take_step_cuts() == {}
    _mlp(DEVICE)
    with warnings.catch_warnings():
        warnings.simplefilter("error", lr.GraphCutWarning)
        lr.mark_step()
    assert lr.metrics.take_step_cuts() == {}


class _Declares:
    def __init__(self, declared) -> None:
        self.name = "declares"
        self.declared = declared

    def refused_ops(self):
        return self.declared


@pytest.mark.parametrize(
    "declared, message",
    [
        ({"no_such_op": None}, "refuses 'no_such_op', which names no op"),
        ({"aten::mm.nope": None}, "refuses 'aten::mm.nope', which names no op"),
        ({3: None}, "refuses 3, which names no op"),
        ({"mm": True}, "refused_ops\\(\\) maps an op to None"),
    ],
)
def test_bad_declarations_name_the_backend(declared, message):
    with pytest.raises(lr.LazygenRuntimeError, match=message) as caught:
        refusals.install(_Declares(declared))
    assert "backend 'declares'" in str(caught.value)


def test_keys_name_overloads_packets_and_strings():
    backend = _Declares(
        {aten.sort.stable: None, aten.cumsum: None, "aten::topk": None, "gather.default": None}
    )
    refusals.install(backend)

    def refused(op) -> bool:
        return any(b is backend for b, _ in refusals.rules_for(op))

    assert refused(aten.sort.stable) and not refused(aten.sort.default)
    assert refused(aten.cumsum.default) and refused(aten.cumsum.out)
    assert refused(aten.topk.default) and refused(aten.gather.default)
    assert not refused(aten.mm.default)


def test_unrefused_kernels_are_left_as_they_are():
    kernel = object()
    assert refusals.guard(aten.neg.default, kernel) is kernel


class AttentionDecliningBackend(TorchScriptBackend):
    """TorchScript without the attention nodes (``ops/attention.DECLINABLE_NAMES``)."""

    name = "declining-attention"

    def __init__(self, refused: str) -> None:
        super().__init__()
        self.refused = refused

    def refused_ops(self) -> dict:
        return {self.refused: None}


#: The neutral ops, and the names refusals took before them (issue #39).
DECLINED = {
    "neutral": "lazygen::attention",
    "neutral_backward": "lazygen::attention_backward",
    "sdpa": "scaled_dot_product_attention",
    "overrideable": "_scaled_dot_product_fused_attention_overrideable",
    "cpu_flash": "aten::_scaled_dot_product_flash_attention_for_cpu",
}


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("refused", sorted(DECLINED))
def test_declined_attention_is_decomposed_into_plain_ops(refused, is_causal):
    """Refusing attention was silently ignored (the fused node was traced anyway); it now
    takes ATen's math path: plain ops in the graph, no attention node, eager's results.
    (Forward only: backward runs on index 0 alone, docs/device-contract.md; the choice is
    made at the forward, for both nodes.)"""
    index = 9
    lr.set_device_backend(index, AttentionDecliningBackend(DECLINED[refused]))
    device = f"lazygen:{index}"
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 5, 4, requires_grad=True) for _ in range(3))
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    lr.metrics.reset()
    lazy = [t.detach().to(device).requires_grad_() for t in (q, k, v)]
    got = torch.nn.functional.scaled_dot_product_attention(*lazy, is_causal=is_causal)
    torch.testing.assert_close(got.detach().cpu(), want.detach())
    names = lr.metrics.counter_names()
    assert not any("attention" in name for name in names), names
    assert lr.metrics.counter_value("lazy::_softmax") or lr.metrics.counter_value("lazy::bmm")
    # the same call on a device whose backend keeps the node still traces it
    lr.metrics.reset()
    torch.nn.functional.scaled_dot_product_attention(
        q.detach().to("lazygen"), k.detach().to("lazygen"), v.detach().to("lazygen")
    ).cpu()
    assert lr.metrics.counter_value("lazy::attention") == 1
    del lazy, got  # the next case gives the index another backend


def test_a_misspelt_neutral_op_is_an_error():
    """A refusal naming no op (``lazygen::attenton``) is an error naming the backend, not a
    refusal silently ignored."""
    with pytest.raises(lr.LazygenRuntimeError, match="names no op"):
        lr.set_device_backend(10, AttentionDecliningBackend("lazygen::attenton"))


@pytest.mark.parametrize(
    ("refused", "warns"),
    [
        ("linear", True),
        ("aten::reshape", True),
        ("sort", False),
        ("scaled_dot_product_attention", False),
    ],
)
def test_refusing_an_op_torch_decomposes_first_warns(refused, warns):
    """``linear`` and ``reshape`` are decomposed by torch before the lazy device sees them
    (CompositeImplicitAutograd, no lazy kernel): refusing them did nothing, silently. Ops
    with a lazy kernel (``sort``; ``scaled_dot_product_attention`` at the autograd key)
    are refused without a warning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lr.set_device_backend(13, AttentionDecliningBackend(refused))
    messages = [str(w.message) for w in caught if "never reaches the lazy device" in str(w.message)]
    assert bool(messages) == warns, messages
    if warns:
        assert repr(refused) in messages[0] and "'declining-attention'" in messages[0]


def test_rules_for_is_remembered_per_op_until_a_backend_is_installed(refusing, monkeypatch):
    """Attention asks ``rules_for`` of 6 ops at every call: each op's merged rules are kept
    (looked up by id, not by ``OpOverload``'s Python hash), and installing another
    backend's refusals, which may add to them, forgets them."""
    op = aten.relu.default
    rules = refusals.rules_for(op)
    before = [backend.name for backend, _ in rules]  # other files' backends may refuse it too
    assert "refusing" in before
    assert refusals.rules_for(op) is rules  # remembered, not merged again
    asked = []
    monkeypatch.setattr(
        type(op), "__hash__", lambda self: asked.append(self) or id(self), raising=False
    )
    refusals.rules_for(op)
    assert asked == []  # found by id
    monkeypatch.undo()
    lr.set_device_backend(11, AttentionDecliningBackend("aten::relu"))
    after = [backend.name for backend, _ in refusals.rules_for(op)]
    assert after == [*before, "declining-attention"]
