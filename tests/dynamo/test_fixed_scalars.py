"""The numbers an FX graph holds as literals are constants of the captured graph
(``ir.FixedScalar``): the graph key holds their values, and backends compile them in
instead of reading a 0-dim tensor input on every run (an AdamW step on the inductor backend
read 360 of them per call, each an unbacked symbol splitting Inductor's kernels)."""

from __future__ import annotations

import pytest
import torch

import lazygen.dynamo as ld
import lazygen.runtime as lr
from lazygen.runtime.ir import FixedScalar

from .conftest import count

#: The literals: equal as Python numbers in pairs (0.0 == -0.0, 2 == 2.0), different to eager.
LITERALS = (0.5, 0.25, 0.0, -0.0, 2, 2.0)


def _scaled(c):
    def f(x):
        return (x * c).sin() + c

    return f


def _graphs_compiled(monkeypatch, backend_name: str) -> list:
    """Record every graph the backend of ``backend_name``'s device compiles."""
    device = ld.device_for(backend_name)
    compiled = []
    compile_ = device.backend.compile

    def recording(order, outputs, torch_device):
        compiled.append((list(order), list(outputs), torch_device))
        return compile_(order, outputs, torch_device)

    monkeypatch.setattr(device.backend, "compile", recording)
    return compiled


@pytest.mark.parametrize("backend", ["torchscript", "fx"])
def test_literals_of_one_structure_compile_apart_and_equal_eager(backend, monkeypatch):
    compiled = _graphs_compiled(monkeypatch, backend)
    x = torch.tensor([0.5, 1.0, -2.0, 0.0])
    for c in LITERALS:
        # Dynamo compiles a new value of a function's float as an input (a tensor the graph
        # reads) once it has seen another: forgetting its graphs keeps each a literal, while
        # lazygen's compile cache, keyed by graph, is kept.
        torch._dynamo.reset()
        f = _scaled(c)
        got = torch.compile(f, backend="lazygen", options={"backend": backend})(x)
        want = f(x)
        assert got.dtype == want.dtype
        # bit for bit, the sign of zero included (x * -0.0 is -0.0 where x > 0)
        assert torch.equal(got, want) and torch.equal(torch.signbit(got), torch.signbit(want))
    inputs = [n for order, _, _ in compiled for n in order if n.is_input]
    fixed = [n for n in inputs if type(n) is FixedScalar]
    assert {repr(n.value) for n in fixed} >= {repr(c) for c in LITERALS}
    assert len(compiled) == len(LITERALS)  # one graph per literal: none served another's


def test_torchscript_compiles_fixed_numbers_in_as_constants(monkeypatch):
    compiled = _graphs_compiled(monkeypatch, "torchscript")

    def f(x):  # Scalar arguments: read with aten::item were they graph inputs
        return torch.nn.functional.leaky_relu(x, 0.75).clamp(min=-0.375)

    x = torch.randn(5)
    got = torch.compile(f, backend="lazygen", options={"backend": "torchscript"})(x)
    assert torch.equal(got, f(x))
    ((order, outputs, torch_device),) = compiled
    text = ld.device_for("torchscript").backend.dump(order, outputs, torch_device)
    assert "aten::item" not in text
    assert "0.75" in text and "-0.375" in text


def test_fx_graph_reads_no_number_on_the_host(monkeypatch):
    compiled = _graphs_compiled(monkeypatch, "fx")
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model(torch.randn(2, 4)).sum().backward()

    @torch.compile(backend="lazygen", options={"backend": "fx"})
    def step():
        opt.step()

    ref = [p.detach().clone() for p in model.parameters()]
    step()
    assert any(not torch.equal(p, r) for p, r in zip(model.parameters(), ref, strict=True))
    backend = ld.device_for("fx").backend
    texts = [backend.dump(order, outputs, d) for order, outputs, d in compiled]
    assert texts and all("_local_scalar_dense" not in t for t in texts)


def test_inductor_compiles_an_alpha_in_without_fixing_a_scalar_read(monkeypatch):
    """Inductor's ``add`` branches on ``alpha == 1``: a read number made the trace fail
    once and the scalar be fixed (``InductorFixedScalar``); a literal is a constant."""
    pytest.importorskip("torch._inductor")
    f = torch.compile(
        lambda x, y: torch.add(x, y, alpha=3.0) * 0.5,
        backend="lazygen",
        options={"backend": "inductor"},
    )
    x, y = torch.randn(6), torch.randn(6)
    torch.testing.assert_close(f(x, y), torch.add(x, y, alpha=3.0) * 0.5, rtol=0, atol=0)
    assert count("InductorFixedScalar") == 0
    assert count("DynamoEagerGraph") == 0


@pytest.fixture
def recompile_limit():
    """The default budget (the suites run without one), restored afterwards with the
    dynamic-shapes switch that spending it turns on."""
    previous = lr.config.get_recompile_limit()
    lr.config.set_recompile_limit(8)
    yield
    lr.config.set_recompile_limit(previous)
    lr.config.set_dynamic_shapes(False)


@pytest.mark.parametrize("backend", ["torchscript", "fx"])
def test_a_graph_with_literals_compiles_for_all_sizes_past_the_recompile_limit(
    backend, recompile_limit
):
    """Past the recompile limit a structure seen with many sizes compiles once for all of
    them, from a copy whose inputs hold no data (``graph.dynamic.hidden_sizes``): that copy
    raised AttributeError on a ``FixedScalar`` (greedy ``generate`` with a compiled forward
    failed at its ninth token). The literal stays a constant of the copy."""
    f = _scaled(2.5)
    compiled = torch.compile(f, backend="lazygen", options={"backend": backend})
    for n in range(2, 14):
        x = torch.linspace(-1.0, 1.0, n)
        torch.testing.assert_close(compiled(x), f(x))
    assert count("DynamicCompile") == 1
