"""Int attributes that are sizes (``graph/size_inputs.py``): with dynamic shapes on, a
``SymInt`` attribute equal to a size of its node's tensors (a causal mask's slice end cut
to the sequence length) is a graph input, so lengths do not key the graph; other
attributes stay constants. The jax case: tests/runtime/backends/test_jax_dynamic_shapes.py."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from lazygen.runtime.builtin.generated import ir
from support.training import assert_as_accurate_as_eager

import lazygen.runtime as lr
from lazygen.runtime.execution import executor
from lazygen.runtime.graph import size_inputs
from lazygen.runtime.ir import DeviceData, Shape, Value


@pytest.fixture
def dynamic(fresh_metrics):
    executor.clear_compile_cache()
    lr.config.set_dynamic_shapes(True)
    yield fresh_metrics
    lr.config.set_dynamic_shapes(False)


class TinyCausalLM(torch.nn.Module):
    """What keyed GPT-2's graphs by length, small: a causal mask buffer cut to the length
    (``slice_copy``'s end), a fused projection split in three, views to heads, a loss
    whose ``ignore_index`` (-100) is a ``SymInt`` that is not a size."""

    def __init__(self, vocab: int = 11, width: int = 8, heads: int = 2, most: int = 24) -> None:
        super().__init__()
        self.heads = heads
        self.embed = torch.nn.Embedding(vocab, width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.head = torch.nn.Linear(width, vocab)
        self.register_buffer("causal", torch.ones(most, most, dtype=torch.bool).tril())

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        batch, length = ids.shape
        x = self.embed(ids)
        q, k, v = self.qkv(x).split(x.shape[-1], dim=2)
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        mask = self.causal[:length, :length]  # the slice end is the length
        weights = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        out = (weights @ v).transpose(1, 2).reshape(batch, length, -1)
        logits = self.head(out + x)
        return torch.nn.functional.cross_entropy(
            logits.view(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100
        )


def _batches(lengths, vocab: int = 11):
    generator = torch.Generator().manual_seed(1)
    batches = []
    for n in lengths:
        ids = torch.randint(0, vocab, (2, n), generator=generator)
        labels = ids.roll(-1, 1)
        labels[:, -1] = -100
        batches.append((ids, labels))
    return batches


def train_over_lengths(model, batches, device: str, dtype=torch.float32) -> list:
    """Losses and final parameters (float64 on the CPU) of AdamW over the batches."""
    model = copy.deepcopy(model).to(device=device)
    if dtype is not torch.float32:
        model = model.to(dtype)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for ids, labels in batches:
        loss = model(ids.to(device), labels.to(device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if device != "cpu":
            lr.mark_step()
        losses.append(loss.detach())
    params = [p.detach().to("cpu", torch.float64) for p in model.parameters()]
    return [loss.to("cpu", torch.float64) for loss in losses] + params


def check_causal_lm_over_lengths(lengths, device: str = "lazygen") -> None:
    """Train over ``lengths`` on ``device``: like eager within eager's own error."""
    torch.manual_seed(0)
    model = TinyCausalLM()
    batches = _batches(lengths)
    lazy = train_over_lengths(model, batches, device)
    eager = train_over_lengths(model, batches, "cpu")
    assert_as_accurate_as_eager(
        lazy, eager, lambda: train_over_lengths(model, batches, "cpu", torch.float64), atol=1e-5
    )


LENGTHS = (5, 9, 7, 12, 9, 6, 10)


def test_lengths_share_the_graphs_of_a_causal_model(dynamic):
    """Regression (issue 49): the mask's slice end keyed every graph by length, so each
    length compiled (GPT-2: 13 compiles and 7 uncompiled steps over 16 lengths). Now each
    step is two graphs (the loss first: ``graph/split.py``), compiled for all sizes at the
    first step (AdamW makes its state) and the second (the steady step); every other
    length reuses them."""
    check_causal_lm_over_lengths(LENGTHS)
    assert dynamic.counter_value("UncachedCompile") == 4, dynamic.report()
    assert dynamic.counter_value("DynamicCompile") == 4
    assert dynamic.counter_value("DynamicShapeReuse") == 2 * (len(LENGTHS) - 2) - 2  # 9 again
    assert not dynamic.counter_value("UncompiledGraphRun")


def _slice_node(sizes, start, end, operand_sizes=None):
    data = DeviceData(torch.zeros(operand_sizes or (24, 24)))
    shape = (Shape(torch.float32, sizes),)
    return (Value(data, 0), Value(data, 0)), (0, start, end), shape  # self, step


def test_lift_makes_inputs_of_the_sizes_only():
    cpu = lr.devices.default_device()
    operands, attrs, shapes = _slice_node((9, 24), 0, 9)
    cls, lifted_operands, lifted = size_inputs.lift(
        ir.SliceCopyTensor, operands, attrs, shapes, cpu
    )
    assert lifted == (0, 0, 9) and [type(a) for a in lifted] == [int, int, size_inputs.SizeArgument]
    assert cls is size_inputs.sized_class(ir.SliceCopyTensor) and issubclass(
        cls, ir.SliceCopyTensor
    )
    (end,) = lifted_operands[-1]
    assert end.node.value == 9 and lifted_operands[:-1] == operands
    # 0 and 1 are not lifted (Dynamo specialises them), nor a number equal to no size
    for start, end in ((1, 2**63 - 1), (0, 1), (3, 7)):
        operands, attrs, shapes = _slice_node((min(end, 24) - start, 24), start, end)
        as_given = size_inputs.lift(ir.SliceCopyTensor, operands, attrs, shapes, cpu)
        assert as_given == (ir.SliceCopyTensor, operands, attrs)
    assert size_inputs.generic_attrs(lifted) == (0, 0, size_inputs.HIDDEN)


def test_an_int_list_with_a_size_in_it_reads_it_from_its_input(dynamic):
    """``F.pad``'s amounts are one ``SymInt[]`` attribute: the amount equal to a size is an
    input, the zeros stay constants (TorchScript builds the mixed int list)."""
    for n in (3, 5, 7):
        x = torch.randn(4, n)
        got = torch.nn.functional.pad(x.to("lazygen") * 2, (0, n))
        lr.mark_step()
        torch.testing.assert_close(got.cpu(), torch.nn.functional.pad(x * 2, (0, n)))
    assert dynamic.counter_value("UncachedCompile") == 1
    assert dynamic.counter_value("DynamicShapeReuse") == 2


def test_without_dynamic_shapes_attributes_stay_constants(fresh_metrics):
    executor.clear_compile_cache()
    mask = torch.ones(16, 16).to("lazygen")
    lr.mark_step()
    for n in (4, 6):
        got = mask[:n, :n] * 2
        node = lr.inner(got)._value.node
        assert not any(type(a) is size_inputs.SizeArgument for a in node.operands[0].node.attrs)
        lr.mark_step()
    assert fresh_metrics.counter_value("UncachedCompile") == 2


def test_the_explanation_names_the_attribute_and_its_op(dynamic, capsys):
    """Under dynamic shapes an attribute that is not a size still keys the graph: the
    explanation names it (its schema text), its op and both values, and does not advise
    turning dynamic shapes on."""
    lr.config.set_explain_recompiles(True)
    try:
        for n, shift in ((5, 2), (6, 2), (7, 3)):
            got = torch.roll(torch.ones(4, n).to("lazygen") * 2, shift, 1)
            lr.mark_step()
            torch.testing.assert_close(got.cpu(), torch.roll(torch.ones(4, n) * 2, shift, 1))
    finally:
        lr.config.set_explain_recompiles(False)
    err = capsys.readouterr().err
    assert "recompiling a graph of" in err and "aten::roll" in err, err
    assert "attribute 'SymInt[1] shifts' = (3,)" in err, err
    assert "attribute 'SymInt[1] shifts' = (2,)" in err, err
    assert "reason: attribute: " in err and "LAZYGEN_DYNAMIC_SHAPES=1" not in err, err
    assert dynamic.counter_value("UncachedCompile") == 2


def test_no_explanation_advises_dynamic_shapes_when_they_are_on(dynamic, capsys):
    """A graph a lowering keeps per size (the LSTM unrolls over time) is a shape recompile:
    with dynamic shapes on, the advice says so instead of telling to turn them on."""
    rnn = torch.nn.LSTM(3, 4).to("lazygen")
    lr.config.set_explain_recompiles(True)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            for n in (2, 3):
                rnn(torch.randn(n, 1, 3).to("lazygen"))[0].cpu()
    finally:
        lr.config.set_explain_recompiles(False)
    err = capsys.readouterr().err
    assert "reason: shape: a tensor's size changed. Dynamic shapes are on" in err, err
    assert "Set LAZYGEN_DYNAMIC_SHAPES=1" not in err, err
