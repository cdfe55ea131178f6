"""``inductor/direct.py``: Inductor's compiled code called without aot_autograd's runtime
wrapper, checked bit for bit against the wrapped call of the same compile.

The graphs are written as the FX lowering writes them: aten overloads, views as views,
scalars as 0-dim tensors read with ``_local_scalar_dense``, optimizer results written into
their inputs with ``copy_`` (``ir.InputWrite``).
"""

from __future__ import annotations

import torch
import torch.fx

from lazygen.runtime.backends.fx.lowering import READ_AS_SIZE
from lazygen.runtime.backends.inductor import direct
from lazygen.runtime.backends.inductor.compile import CompiledGraph, compile_graph_module

aten = torch.ops.aten
_READ = aten._local_scalar_dense.default


def _step_graph() -> torch.fx.GraphModule:
    """A linear layer and an update of its weight: views of inputs and of intermediates
    (``t``, ``view``, ``slice``), a scalar Inductor needs as a value (``addmm``'s
    ``beta``: compiled in), a scalar kept as a runtime input (the learning rate), and the
    new weight written into its input."""
    g = torch.fx.Graph()
    x, w, bias, beta, lr = (g.placeholder(n) for n in ("x", "w", "bias", "beta", "lr"))
    beta_n, lr_n = g.call_function(_READ, (beta,)), g.call_function(_READ, (lr,))
    y = g.call_function(aten.addmm.default, (bias, x, w), {"beta": beta_n})
    flat = g.call_function(aten.view.default, (y, [-1]))
    grad = g.call_function(aten.mm.default, (g.call_function(aten.t.default, (x,)), y))
    step = g.call_function(aten.mul.Tensor, (grad, lr_n))
    g.call_function(aten.copy_.default, (w, g.call_function(aten.sub.Tensor, (w, step))))
    head = g.call_function(aten.slice.Tensor, (x, 0, 0, 2))
    g.output((y, flat, head))
    return torch.fx.GraphModule(torch.nn.Module(), g)


def _inputs(lr_value: float) -> list:
    torch.manual_seed(0)
    return [
        torch.randn(4, 6),
        torch.randn(6, 3),
        torch.randn(3),
        torch.tensor(0.5),
        torch.tensor(lr_value),
    ]


def _run(graph: CompiledGraph, inputs: list) -> list:
    with torch.no_grad():
        return list(graph(*inputs))


def _variants(graph: CompiledGraph) -> list:
    return [compiled for variants in graph.variants.values() for _, compiled in variants]


def test_direct_call_equals_the_wrapped_call_bit_for_bit(fresh_metrics):
    wrapped = CompiledGraph(_step_graph(), _inputs(0.1), direct=False)
    direct_graph = CompiledGraph(_step_graph(), _inputs(0.1), direct=True)
    assert wrapped.fixed == direct_graph.fixed == (3,)  # beta compiled in, lr an input
    assert all(isinstance(c, direct.DirectCall) for c in _variants(direct_graph))
    assert not any(isinstance(c, direct.DirectCall) for c in _variants(wrapped))
    assert fresh_metrics.counter_value("InductorDirectCall") == 1
    assert not fresh_metrics.counter_value("InductorAotWrapped")
    for lr_value in (0.1, 0.05):  # a runtime scalar: the same compiled code
        a, b = _inputs(lr_value), _inputs(lr_value)
        got, want = _run(direct_graph, a), _run(wrapped, b)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and torch.equal(g, w)
        assert torch.equal(a[1], b[1])  # the weight written in place, the same bits
        assert not torch.equal(a[1], _inputs(lr_value)[1])
    assert len(_variants(direct_graph)) == 1


def test_direct_call_of_a_graph_compiled_for_all_sizes(fresh_metrics):
    """Sizes as symbols and a size input fed as an int: one compile serves both calls."""

    def graph() -> torch.fx.GraphModule:
        g = torch.fx.Graph()
        x, rows = g.placeholder("x"), g.placeholder("rows")
        rows.meta[READ_AS_SIZE] = True
        v = g.call_function(aten.view.default, (x, [g.call_function(_READ, (rows,)), -1]))
        g.output((g.call_function(aten.mul.Tensor, (v, 2.0)), v))
        return torch.fx.GraphModule(torch.nn.Module(), g)

    compiled = {d: CompiledGraph(graph(), None, dynamic=True, direct=d) for d in (True, False)}
    for rows, cols in ((2, 12), (4, 9)):
        x = torch.randn(rows * 2, cols)
        results = {d: _run(c, [x, torch.tensor(rows)]) for d, c in compiled.items()}
        for g, w in zip(results[True], results[False], strict=True):
            assert g.shape == w.shape == (rows, 2 * cols) and torch.equal(g, w)
    assert all(isinstance(c, direct.DirectCall) for c in _variants(compiled[True]))
    assert len(_variants(compiled[True])) == 1
    assert not fresh_metrics.counter_value("InductorRecompile")


def test_aots_wrapper_is_kept_where_it_has_work(fresh_metrics):
    """One tensor given as two inputs, one of them written: aot deduplicates them, so
    its compiled code takes fewer inputs than the graph and only its wrapper can call it."""
    g = torch.fx.Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    total = g.call_function(aten.add.Tensor, (a, b))
    g.call_function(aten.copy_.default, (a, total))
    g.output((g.call_function(aten.mul.Tensor, (b, 3.0)),))
    module = torch.fx.GraphModule(torch.nn.Module(), g)
    t = torch.ones(3)
    compiled = compile_graph_module(module, [t, t])
    assert not isinstance(compiled, direct.DirectCall)
    assert fresh_metrics.counter_value("InductorAotWrapped") == 1
    u = torch.ones(3)
    with torch.no_grad():
        (out,) = compiled(u, u)
    assert torch.equal(u, torch.full((3,), 2.0)) and torch.equal(out, torch.full((3,), 6.0))


def _plain_graph() -> torch.fx.GraphModule:
    """A product and a weight update with no scalar: nothing to choose per call."""
    g = torch.fx.Graph()
    x, w = g.placeholder("x"), g.placeholder("w")
    y = g.call_function(aten.mm.default, (x, w))
    g.call_function(aten.copy_.default, (w, g.call_function(aten.mul.Tensor, (w, 0.5))))
    g.output((g.call_function(aten.relu.default, (y,)),))
    return torch.fx.GraphModule(torch.nn.Module(), g)


def test_direct_runner_is_inductors_code_for_a_graph_compiled_for_good():
    """The replay's runner skips the per-call choice of variant: the same results and
    writes as the graph's own call, while grad mode stays the caller's."""
    torch.manual_seed(0)
    x, w = torch.randn(4, 5), torch.randn(5, 3)
    graph = CompiledGraph(_plain_graph(), [x, w])
    run = graph.direct_runner()
    assert run is not None and isinstance(run.__self__, direct.DirectCall)
    w_direct, w_called = w.clone(), w.clone()
    inputs = [x, w_direct]
    got = run(inputs)
    assert inputs == [x, w_direct]  # Inductor clears the list it is given: a copy
    assert torch.is_grad_enabled()
    (want,) = _run(graph, [x, w_called])
    assert type(got) is list and len(got) == 1 and torch.equal(got[0], want)
    assert torch.equal(w_direct, w_called) and torch.equal(w_direct, w * 0.5)


def test_no_direct_runner_where_a_call_still_chooses():
    """A scalar compiled in (another value compiles another variant), a graph compiled
    for all sizes, or aot's wrapper kept: the runner goes through the graph's call."""
    fixed = CompiledGraph(_step_graph(), _inputs(0.1))
    assert fixed.fixed and fixed.direct_runner() is None
    dynamic = CompiledGraph(_plain_graph(), None, dynamic=True)
    assert dynamic.direct_runner() is None
    torch.manual_seed(0)
    wrapped = CompiledGraph(_plain_graph(), [torch.randn(4, 5), torch.randn(5, 3)], direct=False)
    assert wrapped.direct_runner() is None
