"""A backend whose graphs may write their inputs (``Backend.writes_inputs``: Inductor,
TorchScript) gets
an optimizer step's writes of parameters and states inside the graph (``ir.InputWrite``,
after every other node), instead of returning the new values for the replay to copy back;
an argument some lowering may alias (a view copy, ``clone``...) is still written back."""

from __future__ import annotations

import copy

import pytest
import torch

import lazygen.runtime as lr
from lazygen.dynamo import compiled
from lazygen.runtime import state as runtime_state
from lazygen.runtime.backends.fx.backend import FxBackend
from lazygen.runtime.backends.torchscript.backend import TorchScriptBackend
from lazygen.runtime.graph import post_order
from lazygen.runtime.ir import DeviceData, InputWrite, Value

from .conftest import count


@pytest.fixture
def fx_writing_inputs(monkeypatch):
    """The ``fx`` backend (uncompiled GraphModules: cheap) with its graphs writing inputs."""
    monkeypatch.setattr(FxBackend, "writes_inputs", True)
    return {"backend": "fx"}


@pytest.fixture
def replays():
    """The replays of the FX graphs compiled during the test."""
    before = set(runtime_state.part(compiled.Compiled))

    def made() -> list:
        graphs = [g for g in runtime_state.part(compiled.Compiled) if g not in before]
        return [e for g in graphs for e in g.entries.values() if type(e) is compiled.Replay]

    return made


_data = torch.Generator().manual_seed(0)
X, Y = torch.randn(4, 6, generator=_data), torch.randint(0, 3, (4,), generator=_data)


def _step(model, opt_cls, x=X, y=Y, **kw):
    opt = opt_cls(model.parameters(), **kw)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        loss = loss.detach()
        opt.step()
        return loss

    return step, opt


def _states(model, opt) -> list[torch.Tensor]:
    tensors = [p.detach() for p in model.parameters()]
    for state in opt.state.values():
        tensors += [t.detach() for t in state.values() if torch.is_tensor(t)]
    return tensors


def _steps_equal_with_and_without_writes(monkeypatch, backend_cls, name, opt_cls, kw) -> tuple:
    """Four compiled steps of one model with its backend's graphs writing their inputs and
    of a copy with them returned for the replay to write back: losses, parameters and
    states equal bit for bit. Returns both compiled steps (their graphs are held weakly:
    ``replays`` sees them while the caller keeps these)."""
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    ref = copy.deepcopy(model)
    step, opt = _step(model, opt_cls, **kw)
    ref_step, ref_opt = _step(ref, opt_cls, **kw)
    options = {"backend": name}
    torch._dynamo.config.trace_autograd_ops = True
    try:
        run = torch.compile(step, backend="lazygen", options=options)
        ref_run = torch.compile(ref_step, backend="lazygen", options=options)
        for _ in range(4):
            monkeypatch.setattr(backend_cls, "writes_inputs", True)  # read when capturing
            got = run()
            monkeypatch.setattr(backend_cls, "writes_inputs", False)
            want = ref_run()
            assert torch.equal(got, want)
    finally:
        torch._dynamo.config.trace_autograd_ops = False
    for got, want in zip(_states(model, opt), _states(ref, ref_opt), strict=True):
        assert torch.equal(got, want)
    return run, ref_run


@pytest.mark.parametrize(
    ("opt_cls", "kw"),
    [
        (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
        (torch.optim.AdamW, {"lr": 1e-2}),
        (torch.optim.Adam, {"lr": 1e-2, "foreach": False}),
    ],
)
def test_an_optimizer_step_writes_parameters_and_states_in_its_graph(
    monkeypatch, replays, opt_cls, kw
):
    """The same graphs, bit for bit the same results, whether the graph writes the
    parameters and states itself or returns them for the replay to copy back."""
    _alive = _steps_equal_with_and_without_writes(  # its graphs stay in replays()
        monkeypatch, FxBackend, "fx", opt_cls, kw
    )
    made = replays()
    writing = [r for r in made if "aten.copy_.default" in r.executable.module.code]
    assert writing and all(not r.mutations for r in writing)
    assert any(r.mutations for r in made)  # the reference's, written back
    assert count("DynamoEagerGraph") == 0


def test_parameters_inductor_writes_in_its_graph_are_seen_written_by_autograd():
    """Inductor's code is called without aot_autograd's inner wrapper (``direct.py``), which
    would bump the version counters of the inputs it writes; Dynamo's own wrapper bumps the
    parameters', so a backward through a value saved before the step still fails as in
    eager instead of using the new weights silently."""
    model = torch.nn.Linear(6, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(X).sum().backward()
    run = torch.compile(opt.step, backend="lazygen", options={"backend": "inductor"})
    for _ in range(2):
        saved = (model.weight * model.weight).sum()  # mul saves the weight
        version = model.weight._version
        before = model.weight.detach().clone()
        run()
        assert model.weight._version > version
        assert torch.equal(model.weight.detach(), before - 0.1 * model.weight.grad)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            saved.backward()
    assert count("InductorDirectCall") >= 1 and not count("InductorAotWrapped")


def test_an_argument_a_lowering_may_alias_is_written_back_not_in_the_graph(
    fx_writing_inputs, replays
):
    """``b`` gets ``a``'s old columns through a slice, which a backend may lower as a view
    of ``a``: written in the graph, ``a`` would change under it. ``b`` is read by ``a``'s
    write: written in the graph, ``a`` might get the new ``b``."""

    def swap_through_views(a, b):
        old = a[:, 1:] * 3  # a value: a's old columns (a view would see a's new ones)
        a.copy_(b)
        b[:, 1:] = old

    a, b = torch.randn(3, 3), torch.randn(3, 3)
    ea, eb = a.clone(), b.clone()
    swap_through_views(ea, eb)
    torch.compile(swap_through_views, backend="lazygen", options=fx_writing_inputs)(a, b)
    assert torch.equal(a, ea) and torch.equal(b, eb)
    (replay,) = replays()
    assert "aten.copy_.default" not in replay.executable.module.code and len(replay.mutations) == 2


def test_writes_read_the_old_values_of_every_argument(fx_writing_inputs, replays):
    """Every write runs after every read: ``b``'s new value reads ``a``'s old one."""

    def rotate(a, b, c):
        a.mul_(2)
        b.add_(a * 0 + c)  # reads the new a: a value, not the argument
        c.sub_(a.sum() / 100)

    args = [torch.randn(4) for _ in range(3)]
    expected = [t.clone() for t in args]
    rotate(*expected)
    torch.compile(rotate, backend="lazygen", options=fx_writing_inputs)(*args)
    for got, want in zip(args, expected, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    (replay,) = replays()
    assert replay.executable.module.code.count("aten.copy_.default") == 3 and not replay.mutations


_OPTIMIZERS = [
    (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
    (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "foreach": False}),
    (torch.optim.AdamW, {"lr": 1e-2}),
    (torch.optim.Adam, {"lr": 1e-2, "foreach": False}),
]


@pytest.mark.parametrize(("opt_cls", "kw"), _OPTIMIZERS)
def test_torchscript_computes_the_new_parameters_and_states_into_them(
    monkeypatch, replays, opt_cls, kw
):
    """TorchScript graphs write the step's last pointwise op per tensor into the tensor
    (``passes.write_in_place``): no copies, no new buffers, and bit for bit the values of
    the same graphs returning them for the replay to copy back."""
    _alive = _steps_equal_with_and_without_writes(  # its graphs stay in replays()
        monkeypatch, TorchScriptBackend, "torchscript", opt_cls, kw
    )
    made = [r for r in replays() if r.executable is not None]
    written = [r for r in made if _out_variants(r.executable.graph)]
    assert written and all(not r.mutations for r in written)
    assert all("aten::copy_" not in str(r.executable.graph) for r in written)
    assert count("DynamoEagerGraph") == 0


def _out_variants(graph) -> int:
    """How many nodes of a TorchScript graph run an op's out variant."""
    return sum(
        1
        for node in graph.nodes()
        if node.kind().startswith("aten::") and "Tensor(a!) out" in node.schema()
    )


def test_a_write_that_converts_the_dtype_stays_a_copy():
    """A value of another dtype is computed in its own and converted by the write: an out
    variant would compute in the input's dtype. (aot_autograd converts before it writes,
    so the capture makes none of these today; the backend still holds the rule.)"""
    target = DeviceData(torch.zeros(3))
    lazy = torch.full((3,), 1 / 3, dtype=torch.float64).to("lazygen")
    lr.mark_step()
    tripled = lr.inner(lazy * 3)._value
    order = [target] + post_order([tripled])[0]
    order.append(InputWrite(Value(target, 0), tripled))
    backend = TorchScriptBackend()
    graph = backend.lower(order, [], torch.device("cpu")).graph
    assert "aten::copy_" in str(graph) and not _out_variants(graph)
    executable = backend.compile(order, [], torch.device("cpu"))
    inputs = [node.materialize() for node in order if node.is_input]
    assert backend.execute(executable, inputs) == []
    assert torch.equal(inputs[0], (torch.full((3,), 1 / 3, dtype=torch.float64) * 3).float())
    lr.mark_step()
