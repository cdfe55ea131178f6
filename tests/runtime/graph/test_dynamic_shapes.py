"""Dynamic dimensions (``graph/dynamic.py``): a small transformer trained over many
sequence lengths compiles a bounded number of graphs, and every step equals eager's."""

from __future__ import annotations

import copy

import pytest
import torch
from support.training import TinyEncoder, assert_as_accurate_as_eager

import lazygen.runtime as lr
from lazygen.runtime import graph
from lazygen.runtime.execution import executor


@pytest.fixture
def dynamic():
    lr.config.set_dynamic_shapes(True)
    yield
    lr.config.set_dynamic_shapes(False)


def _batches(lengths, seed: int = 1):
    generator = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(2, n, 16, generator=generator), torch.randint(0, 4, (2,), generator=generator))
        for n in lengths
    ]


def _train(model, batches, device: str, dtype=torch.float32):
    model = copy.deepcopy(model).to(device=device, dtype=dtype)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for inputs, targets in batches:
        inputs, targets = inputs.to(device=device, dtype=dtype), targets.to(device)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        if device != "cpu":
            lr.mark_step()
        losses.append(loss.detach())
    params = [p.detach().to("cpu", torch.float64) for p in model.parameters()]
    return [loss.to("cpu", torch.float64) for loss in losses] + params


def _check_against_eager(lengths):
    torch.manual_seed(0)
    model = TinyEncoder()
    batches = _batches(lengths)
    lazy = _train(model, batches, "lazygen")
    eager = _train(model, batches, "cpu")
    assert_as_accurate_as_eager(
        lazy, eager, lambda: _train(model, batches, "cpu", torch.float64), atol=1e-5
    )


LENGTHS = [3 + (i * 7) % 24 for i in range(24)]  # 24 distinct lengths, shuffled


def check_transformer_over_24_lengths() -> None:
    """Train over 24 lengths: equal to eager, at most 8 compiles, no uncompiled run."""
    assert len(set(LENGTHS)) == 24
    executor.clear_compile_cache()
    lr.metrics.reset()
    _check_against_eager(LENGTHS)
    compiles = lr.metrics.counter_value("UncachedCompile")
    assert 0 < compiles <= 8, lr.metrics.report()
    assert lr.metrics.counter_value("DynamicCompile") >= 1
    assert lr.metrics.counter_value("DynamicShapeReuse") >= 20
    assert not lr.metrics.counter_value("UncompiledGraphRun")


def test_transformer_over_24_lengths_compiles_at_most_8_graphs(dynamic):
    """On TorchScript (the fx backend: tests/runtime/backends/test_dynamic_shapes.py)."""
    check_transformer_over_24_lengths()


def _mlp_step(n: int, w: torch.Tensor, device: str = "lazygen") -> torch.Tensor:
    x = torch.arange(n * 8, dtype=torch.float32).reshape(n, 8).to(device) / 10
    y = (x @ w).relu().view(-1).sum() + x.view(2, -1).sum(dim=1)[0]
    if device != "cpu":
        lr.mark_step()
    return y


def test_a_graph_compiles_once_for_all_sizes(dynamic, fresh_metrics):
    executor.clear_compile_cache()
    w = torch.randn(8, 4)
    lazy_w = w.to("lazygen")
    for n in (4, 6, 8, 10, 12, 14):  # (n = 2: x.view(2, -1) is x, another graph)
        got = _mlp_step(n, lazy_w)
        torch.testing.assert_close(got.cpu(), _mlp_step(n, w, "cpu"))
    assert fresh_metrics.counter_value("UncachedCompile") == 1  # from the first size on
    assert fresh_metrics.counter_value("DynamicCompile") == 1
    assert fresh_metrics.counter_value("DynamicShapeReuse") == 5


def test_mark_dynamic_compiles_for_all_sizes_at_once(fresh_metrics):
    executor.clear_compile_cache()
    try:
        for n in (3, 5, 7):
            x = torch.randn(n, 4).to("lazygen")
            lr.mark_dynamic(x, 0)
            y = (x * 2).sum(dim=1)
            lr.mark_step()
            torch.testing.assert_close(y.cpu(), (x.cpu() * 2).sum(dim=1))
        assert fresh_metrics.counter_value("UncachedCompile") == 1
        assert fresh_metrics.counter_value("DynamicCompile") == 1
    finally:
        lr.config.set_dynamic_shapes(False)


def test_mark_dynamic_rejects_bad_arguments():
    with pytest.raises(TypeError, match="lazygen device"):
        lr.mark_dynamic(torch.ones(3), 0)
    x = torch.ones(3, 2).to("lazygen")
    with pytest.raises(IndexError, match="dim 2 is out of range"):
        lr.mark_dynamic(x, 2)
    with pytest.raises(TypeError, match="dim must be an int"):
        lr.mark_dynamic(x, "0")
    assert not lr.config.get_dynamic_shapes()


def test_int_attributes_that_are_not_sizes_stay_compiled_in(dynamic, fresh_metrics):
    """``cumsum``'s ``dim`` is an int, and ``roll``'s shift a ``SymInt`` equal to no size:
    constants of the graph, so another value is another graph, and the graph compiled for
    all sizes never serves the wrong one."""
    executor.clear_compile_cache()
    for n, dim, shift in ((5, 0, 3), (6, 0, 3), (7, 1, 3), (8, 1, 3), (9, 0, 3), (9, 0, 2)):
        x = torch.randn(4, n)
        got = torch.roll(x.to("lazygen").cumsum(dim), shift, 1) * 2
        lr.mark_step()
        torch.testing.assert_close(got.cpu(), torch.roll(x.cumsum(dim), shift, 1) * 2)
    assert fresh_metrics.counter_value("UncachedCompile") == 3  # dim 0, dim 1, shift 2


def test_a_symint_attribute_equal_to_a_size_is_a_size_input(dynamic, fresh_metrics):
    """``topk``'s ``k`` is its result's size, a causal mask's slice end the sequence
    length: graph inputs, so one graph serves every k and length, and gives each its own."""
    executor.clear_compile_cache()
    mask = torch.ones(16, 16).tril()
    lazy_mask = mask.to("lazygen")
    for n, k in ((5, 2), (6, 2), (7, 3), (8, 3), (9, 2)):
        x = torch.randn(4, n)
        got = torch.topk(x.to("lazygen"), k, dim=1)[0] * 2 + lazy_mask[:4, :n].sum()
        lr.mark_step()
        want = torch.topk(x, k, dim=1)[0] * 2 + mask[:4, :n].sum()
        torch.testing.assert_close(got.cpu(), want)
    assert fresh_metrics.counter_value("UncachedCompile") == 1
    assert fresh_metrics.counter_value("DynamicShapeReuse") == 4


def test_a_lowering_that_reads_sizes_compiles_per_size(dynamic, fresh_metrics):
    """The LSTM's lowering unrolls over the time steps (it reads a size): its graph is
    compiled for its own sizes, never for all of them, and stays right."""
    executor.clear_compile_cache()
    torch.manual_seed(0)
    rnn = torch.nn.LSTM(3, 4, batch_first=True)
    lazy_rnn = copy.deepcopy(rnn).to("lazygen")
    for n in (2, 3, 4):
        x = torch.randn(2, n, 3)
        with torch.no_grad():
            got = lazy_rnn(x.to("lazygen"))[0]
            lr.mark_step()
            torch.testing.assert_close(got.cpu(), rnn(x)[0])
    assert fresh_metrics.counter_value("DynamicCompileFallback") >= 1
    assert not fresh_metrics.counter_value("DynamicShapeReuse")


def test_the_explanation_says_why_a_graph_is_not_compiled_for_all_sizes(dynamic, capsys):
    """A graph refused for all sizes is explained with the reason and the op."""
    executor.clear_compile_cache()
    rnn = torch.nn.LSTM(3, 4).to("lazygen")
    lr.config.set_explain_recompiles(True)
    try:
        with torch.no_grad():
            for n in (2, 3):
                rnn(torch.randn(n, 1, 3).to("lazygen"))[0].cpu()
    finally:
        lr.config.set_explain_recompiles(False)
    err = capsys.readouterr().err
    assert "so:     compiled for its own sizes only: lstm_layers: its lowering reads a" in err


def test_data_dependent_sizes_keep_working(dynamic):
    for n in (4, 6, 9):
        x = torch.randn(n, 3)
        got = x.to("lazygen")
        got = (got[got > 0] * 3).sum() + got.sum(dim=0)
        lr.mark_step()
        torch.testing.assert_close(got.cpu(), (x[x > 0] * 3).sum() + x.sum(dim=0))


def test_generic_key_leaves_sizes_out_and_keeps_attributes(dynamic):
    def key_of(n, dim):
        x = torch.ones(n, 3).to("lazygen")
        lr.mark_step()
        y = x.view(3, n).sum(dim=dim)
        outputs = [lr.inner(y)._value]
        order, position = graph.post_order(outputs)
        return graph.graph_key(order, position, outputs)

    a, b, c = key_of(4, 0), key_of(5, 0), key_of(5, 1)
    assert a != b  # the graph key holds every size
    assert graph.generic_key(a) == graph.generic_key(b)
    assert graph.generic_key(b) != graph.generic_key(c)


def test_the_explanation_says_a_graph_is_compiled_for_all_sizes(dynamic, capsys):
    executor.clear_compile_cache()
    lr.config.set_explain_recompiles(True)
    try:
        w = torch.randn(8, 4).to("lazygen")
        for n in (4, 6, 8):
            _mlp_step(n, w)
    finally:
        lr.config.set_explain_recompiles(False)
    err = capsys.readouterr().err
    assert err.count("lazygen: compiling") == 1 and "recompiling" not in err, err
    assert "so:     compiled once for all sizes" in err, err
