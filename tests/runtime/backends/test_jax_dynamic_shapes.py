"""Dynamic dimensions on the ``jax`` backend (``backends/jax/all_sizes.py``): one lazygen
graph serves every size, XLA compiles each new set of sizes; a graph holding an op that
reads its traced sizes is compiled per size, with the reason in the recompile explanation.
Training runs on ``lazygen:0`` switched to jax (see conftest); the rest on ``lazygen:3``."""

from __future__ import annotations

import copy
import inspect

import pytest
import torch

jax = pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")

import jax.numpy as jnp  # noqa: E402
from support.training import assert_as_accurate_as_eager, make_mlp  # noqa: E402

import lazygen.runtime as lr  # noqa: E402
from lazygen.runtime.backends.jax.backend import JaxBackend  # noqa: E402
from lazygen.runtime.backends.jax.ops import JAX_OPS, table  # noqa: E402
from lazygen.runtime.execution import executor  # noqa: E402
from runtime.graph.test_dynamic_shapes import _check_against_eager  # noqa: E402
from runtime.graph.test_recompile_budget import by_size, run_and_compare  # noqa: E402
from runtime.graph.test_size_inputs import check_causal_lm_over_lengths  # noqa: E402

from .conftest import BACKENDS, index_zero_on  # noqa: E402
from .test_jax_backend import _arrays  # noqa: E402

JAX = "lazygen:3"
COUNTERS = (
    "UncachedCompile", "DynamicCompile", "DynamicShapeReuse", "DynamicCompileFallback",
    "JaxSizeCompile",
)  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def _jax_backend():
    BACKENDS.setdefault("jax", JaxBackend())
    lr.set_device_backend(3, BACKENDS["jax"])
    yield
    lr.mark_step()


@pytest.fixture
def dynamic():
    executor.clear_compile_cache()
    lr.config.set_dynamic_shapes(True)
    yield
    lr.config.set_dynamic_shapes(False)


def _counts(metrics) -> dict:
    return {name: metrics.counter_value(name) or 0 for name in COUNTERS}


def _attention(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Reads sizes the way a transformer does: views to heads, positions by ``arange``,
    a mask by ``full``, an ``expand``, means over the sequence."""
    batch, length, width = x.shape
    q = (x @ w).view(batch, length, 2, width // 2).transpose(1, 2)
    scores = q @ q.transpose(-1, -2) / (width // 2) ** 0.5
    mask = torch.full((length, length), float("-inf"), device=x.device).triu(1)
    weights = (scores + mask).softmax(-1)
    out = (weights @ q).transpose(1, 2).reshape(batch, length, width)
    positions = torch.arange(length, device=x.device, dtype=x.dtype) / length
    bias = positions.view(1, length, 1).expand(batch, length, width)
    return (out + bias).mean(dim=1) + torch.zeros_like(x).sum(dim=1)


def _with_reference(fn, *tensors):
    """``fn`` on the lazy device, on the CPU in float32 and in float64."""
    lazy = fn(*[t.to(JAX) for t in tensors]).cpu()
    return [lazy], [fn(*tensors)], [fn(*[t.double() for t in tensors])]


def test_sequence_lengths_share_one_graph_and_match_eager(dynamic, fresh_metrics, capsys):
    """The first length compiles a graph for all sizes; the others reuse it, XLA compiling
    each new length (``JaxSizeCompile``, explained with the reason ``sizes`` and the new
    input sizes)."""
    w = torch.randn(8, 8)
    lr.config.set_explain_recompiles(True)
    try:
        for length in (5, 7, 9, 7, 12):
            x = torch.randn(3, length, 8)
            lazy, eager, reference = _with_reference(_attention, x, w)
            assert_as_accurate_as_eager(lazy, eager, lambda r=reference: r, atol=1e-5)
    finally:
        lr.config.set_explain_recompiles(False)
    assert _counts(fresh_metrics) == {
        "UncachedCompile": 1,
        "DynamicCompile": 1,
        "DynamicShapeReuse": 3,  # 7, 9 and 12 (7 again is cached under its own key)
        "DynamicCompileFallback": 0,
        "JaxSizeCompile": 4,  # 5, 7, 9, 12: XLA compiles per size
    }
    err = capsys.readouterr().err
    # 5's XLA compile is the graph's first, explained as "compiled once for all sizes"
    assert fresh_metrics.counter_value("Recompile_sizes") == 3, err
    assert "backend 'jax' compiles another variant" in err and "[3, 12, 8]" in err, err


def test_a_causal_model_over_lengths_compiles_its_graphs_once(dynamic, fresh_metrics):
    """Regression (issue 49): a causal mask cut to the length (``slice_copy``'s end) keyed
    the graph by length, and GPT-2 over 16 lengths ran 7 steps uncompiled on jax. The end
    is a size input now: the first and the steady step compile for all sizes, once; XLA
    still compiles each new length (``JaxSizeCompile``)."""
    with index_zero_on("jax"):
        check_causal_lm_over_lengths((5, 9, 7))  # ~30 s here: XLA compiles each length
        counts = _counts(fresh_metrics)
    assert counts["DynamicCompile"] == counts["UncachedCompile"] <= 4, counts
    assert counts["DynamicShapeReuse"] >= 1 and not counts["DynamicCompileFallback"], counts
    assert not fresh_metrics.counter_value("UncompiledGraphRun"), counts


def _train_mlp(batches, device: str, dtype=torch.float32, marked: bool = False, first=None):
    model = make_mlp().to(device=device, dtype=dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for inputs, targets in batches:
        inputs, targets = inputs.to(device=device, dtype=dtype), targets.to(device)
        if marked:
            lr.mark_dynamic(inputs, 0)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        if device != "cpu":
            lr.mark_step()
        losses.append(loss.detach().to("cpu", torch.float64))
        if first is not None and len(losses) == 1:
            first()
    return losses + [p.detach().to("cpu", torch.float64) for p in model.parameters()]


def test_mark_dynamic_trains_every_batch_size_with_one_graph(dynamic, fresh_metrics):
    """A training step whose input's batch dimension is marked dynamic compiles one lazygen
    graph for all batch sizes, equal to eager's training within eager's own error. (The
    first step is a graph of its own, as on every backend: counted apart.)"""
    generator = torch.Generator().manual_seed(1)
    batches = [
        (torch.randn(n, 20, generator=generator), torch.randint(0, 4, (n,), generator=generator))
        for n in (3, 3, 6, 5, 6)
    ]
    with index_zero_on("jax"):
        lazy = _train_mlp(batches, "lazygen", marked=True, first=fresh_metrics.reset)
        counts = _counts(fresh_metrics)
    eager = _train_mlp(batches, "cpu")
    assert_as_accurate_as_eager(
        lazy, eager, lambda: _train_mlp(batches, "cpu", torch.float64), atol=1e-5
    )
    assert counts == {
        "UncachedCompile": 1,
        "DynamicCompile": 1,
        "DynamicShapeReuse": 2,  # 6 and 5 (6 again is cached under its own key)
        "DynamicCompileFallback": 0,
        "JaxSizeCompile": 3,  # 3, 6, 5
    }


def _relu_reading_sizes(shapes, x):
    """relu as an implementation that reads the traced sizes would (registered so)."""
    return jnp.reshape(jnp.maximum(x, 0), table.sizes(shapes))


_relu_reading_sizes.reads_sizes, _relu_reading_sizes.static_args = True, ()


def test_an_op_reading_traced_sizes_compiles_per_size_with_the_reason(
    dynamic, fresh_metrics, capsys, monkeypatch
):
    """An implementation registered ``reads_sizes`` refuses its graph for all sizes: that
    graph is compiled for each size instead, right, and the explanation says why."""
    monkeypatch.setitem(BACKENDS["jax"].ops, "relu", _relu_reading_sizes)
    lr.config.set_explain_recompiles(True)
    try:
        for size in (6, 8, 10):
            x = torch.randn(2, size)
            torch.testing.assert_close((x.to(JAX) * 2).relu().cpu(), (x * 2).relu())
    finally:
        lr.config.set_explain_recompiles(False)
    err = capsys.readouterr().err
    assert "so:     compiled for its own sizes only:" in err, err
    assert "the jax backend's aten::relu takes its result's sizes from the traced graph" in err
    counts = _counts(fresh_metrics)
    # the first size tries all sizes and is refused; the others compile per size at once
    assert counts["UncachedCompile"] == 3 and counts["DynamicCompileFallback"] == 1, counts
    assert counts["DynamicCompile"] == 0 and counts["JaxSizeCompile"] == 0, counts


def test_max_pooling_serves_every_size(dynamic, fresh_metrics):
    """Max pooling computes its output sizes as torch does (``ceil_mode`` included), so a
    CNN's graph serves every image size."""
    for size in (7, 9, 12):
        x = torch.randn(1, 2, size, size + 1)
        for ceil_mode in (False, True):
            got = torch.nn.functional.max_pool2d(x.to(JAX) * 2, 3, 2, 1, ceil_mode=ceil_mode)
            want = torch.nn.functional.max_pool2d(x * 2, 3, 2, 1, ceil_mode=ceil_mode)
            torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)
    counts = _counts(fresh_metrics)
    assert counts["DynamicCompile"] == 2 and counts["DynamicCompileFallback"] == 0, counts


def _names_sizes(fn, seen: set) -> bool:
    """Whether ``fn`` or a function of its module it calls (transitively) names ``sizes``
    (the helper ``table.sizes`` or a shape's ``.sizes``; ``table.rank`` reads only their
    number, which a graph compiled for all sizes keeps)."""
    fn = inspect.unwrap(fn)
    if fn in seen or fn is table.rank or not hasattr(fn, "__code__"):
        return False
    seen.add(fn)
    codes = [fn.__code__] + [c for c in fn.__code__.co_consts if inspect.iscode(c)]
    names = {name for code in codes for name in code.co_names}
    if "sizes" in names:
        return True
    for cell in fn.__closure__ or ():
        if callable(cell.cell_contents) and _names_sizes(cell.cell_contents, seen):
            return True
    called = [fn.__globals__.get(name) for name in names]
    return any(inspect.isfunction(f) and _names_sizes(f, seen) for f in called)


def test_every_op_reading_traced_sizes_declares_it():
    """An implementation that reads the traced sizes would compute a graph for all sizes
    with one size's numbers: it must be registered ``reads_sizes`` (refused for all sizes)
    or take the numbers its sizes depend on as ``static_args`` (compiled in per variant)."""
    undeclared = sorted(
        key
        for key, impl in JAX_OPS.items()
        if _names_sizes(impl, set()) and not (impl.reads_sizes or impl.static_args)
    )
    assert not undeclared, f"these read the traced sizes undeclared: {undeclared}"
    # the check sees through helpers and closures
    assert _names_sizes(JAX_OPS["_softmax"], set()) is False
    assert _names_sizes(lambda shapes, x: _relu_reading_sizes(shapes, x), set())


@pytest.mark.slow
def test_transformer_training_over_lengths_is_eager_with_one_graph_for_all(dynamic):
    """A small transformer + Adam trained over 5 sequence lengths: like eager within its
    own float32 error; the first two steps compile their graphs for all sizes (the
    first makes Adam's state, the second is the steady step), the others reuse the
    second's; XLA compiles each length of each graph (~40 s)."""
    with index_zero_on("jax"):
        lr.metrics.reset()
        _check_against_eager([5, 7, 9, 6, 11])
        counts = _counts(lr.metrics)
    assert counts["UncachedCompile"] == 2 and counts["DynamicCompile"] == 2, counts
    assert counts["DynamicShapeReuse"] == 3 and counts["JaxSizeCompile"] == 5, counts
    assert counts["DynamicCompileFallback"] == 0, counts


def test_a_graph_for_all_sizes_donates_what_the_step_updates(dynamic):
    """The parameters' old buffers go to the step's results at every batch size (decided
    at the graph's first run, as for graphs of one size); the batch, still held, is kept."""
    with index_zero_on("jax"):
        _train_checking_donation()


def _train_checking_donation() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    model.to("lazygen:0")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    kept = BACKENDS["jax"].small_uploads  # uploads of <= 256 bytes: shared, never donated
    for n in (3, 5, 3, 7):
        x = torch.randn(n, 8).to("lazygen:0")
        lr.mark_dynamic(x, 0)
        old, batch = _arrays(model.parameters()), _arrays([x])[0]
        old = [array for array in old if not kept.holds(array)]
        assert old, n  # the 16x8 weight at least (then every parameter: results)
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()
        lr.mark_step()
        assert all(array.is_deleted() for array in old), n
        assert not batch.is_deleted(), n


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU])
def test_recurrent_layers_train_like_eager_compiled_per_size(cls, dynamic, fresh_metrics, capsys):
    """The recurrent lowerings unroll over the time steps (they read a size): on jax their
    graphs are compiled per length, with that reason, and forward and backward equal
    eager's (they call ``transpose.int``, ``narrow``, ``chunk``, ``linear``... which the
    table once lacked: the lowering failed)."""
    lr.config.set_explain_recompiles(True)
    try:
        with index_zero_on("jax"):
            _train_recurrent(cls)
    finally:
        lr.config.set_explain_recompiles(False)
    assert "its lowering reads a tensor size" in capsys.readouterr().err
    assert fresh_metrics.counter_value("DynamicCompileFallback") >= 1
    assert not fresh_metrics.counter_value("DynamicCompile")


def _train_recurrent(cls) -> None:
    torch.manual_seed(0)
    eager = cls(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    lazy = cls(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    lazy.load_state_dict(eager.state_dict())
    reference = copy.deepcopy(eager).double()
    lazy.to("lazygen:0")
    for length in (4, 6, 5):
        x = torch.randn(2, length, 3)
        nets = ((eager, x), (lazy, x.to("lazygen:0")), (reference, x.double()))
        for net, data in nets:
            net.zero_grad()
            net(data)[0].square().sum().backward()
        lr.mark_step()
        got, want, ref = ([p.grad.cpu() for p in net.parameters()] for net, _ in nets)
        assert_as_accurate_as_eager(got, want, lambda ref=ref: ref, atol=1e-5)


def test_past_the_recompile_limit_changing_sizes_compile_for_all_sizes(fresh_metrics):
    """Past the budget, sizes that change switch dynamic shapes on (jax is size-generic):
    one more lazygen graph serves the later sizes, XLA compiling each, instead of running
    them uncompiled; results stay eager's."""
    executor.clear_compile_cache()
    previous = lr.config.get_recompile_limit()
    lr.config.set_recompile_limit(2)
    try:
        caught = run_and_compare(by_size, range(4, 9), JAX)
    finally:
        lr.config.set_recompile_limit(previous)
        lr.config.set_dynamic_shapes(False)
    assert len(caught) == 1, caught
    counts = _counts(fresh_metrics)
    # 2 sizes, the 3rd (traced with sizes as constants) uncompiled, then one for all sizes
    assert fresh_metrics.counter_value("UncompiledGraphRun") == 1, counts
    assert counts["UncachedCompile"] == 3 and counts["DynamicCompile"] == 1, counts
    assert counts["DynamicShapeReuse"] == 1 and counts["JaxSizeCompile"] == 2, counts


@pytest.mark.parametrize(
    "shape, size, stride, offset", [((1,), (1,), (1,), 0), ((5, 5), (3, 3), (1, 2), 1)]
)
def test_a_graph_with_an_empty_list_operand_has_a_size_generic_key(shape, size, stride, offset):
    """``as_strided``'s gradient records a node with an empty list operand: the budget's
    size-generic key read its first reference (an ``IndexError`` out of the user's
    ``backward``, OpInfo's ``as_strided`` gradient samples on jax)."""
    x = torch.randn(shape)
    with index_zero_on("jax"):
        leaf = x.to("lazygen:0").requires_grad_()
        y = torch.as_strided(leaf, size, stride, offset)
        (got,) = torch.autograd.grad(y, leaf, torch.ones_like(y))
        got = got.cpu()
        del leaf, y  # lazygen:0 goes back to its own backend holding no tensors
    eager_leaf = x.clone().requires_grad_()
    eager = torch.as_strided(eager_leaf, size, stride, offset)
    (want,) = torch.autograd.grad(eager, eager_leaf, torch.ones_like(eager))
    torch.testing.assert_close(got, want, rtol=0, atol=0)
