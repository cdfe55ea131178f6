"""The ``inductor`` backend: the fx backend's GraphModules compiled by Inductor.

Every compile costs seconds here (tens of seconds for a training step on 2 cores with a
cold Inductor cache), so the tests are few and share graphs: a loop whose scalars change
every step, Adam training (its bias corrections change every step), SGD with momentum
(slow), a random graph, and a compile failure that must not touch other backends.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
import torch
from support.training import compare_training
from torch.utils._python_dispatch import TorchDispatchMode

import lazygen.runtime as lr
from lazygen.runtime import devices
from lazygen.runtime.backends.fx.lowering import FXLoweringContext
from lazygen.runtime.backends.inductor import backend as inductor_backend
from lazygen.runtime.backends.inductor import culprits as inductor_culprits
from lazygen.runtime.backends.inductor import trace as inductor_trace
from lazygen.runtime.backends.inductor.compile import compile_graph_module
from lazygen.runtime.backends.inductor.op_lowerings import INDUCTOR_LOWERINGS
from lazygen.runtime.dispatch_modes import outside_dispatch
from lazygen.runtime.errors import LazyGraphError
from lazygen.runtime.lowering_context import view_of

from .conftest import BACKENDS, FX, INDUCTOR, index_zero_on


def _update(p, g, ints, lr_, step):
    """An optimizer-like update whose scalars change every call; ``ints * lr_`` checks that
    an int tensor times a float scalar is float32 (eager's promotion), not float64."""
    p = p.add(g, alpha=-lr_)
    p = p * (1.0 - lr_ * 0.1) / (1.0 - 0.9**step)
    return p + ints * lr_


def test_scalars_changing_every_step_compile_once(fresh_metrics):
    p, g = torch.randn(16, 8), torch.randn(16, 8)
    ints = torch.arange(8)
    lazy_p, lazy_g, lazy_ints = p.to(INDUCTOR), g.to(INDUCTOR), ints.to(INDUCTOR)
    for step in range(1, 5):
        lr_ = 0.1 / step
        p = _update(p, g, ints, lr_, step)
        lazy_p = _update(lazy_p, lazy_g, lazy_ints, lr_, step)
        lr.mark_step()
        assert lazy_p.dtype == p.dtype == torch.float32
        torch.testing.assert_close(lazy_p.cpu(), p, atol=1e-6, rtol=1e-6)
    assert fresh_metrics.counter_value("UncachedCompile") == 1
    assert not fresh_metrics.counter_value("InductorRecompile")


def test_adam_training_matches_eager_and_compiles_once_per_graph(fresh_metrics):
    with index_zero_on("inductor"):
        uncached = compare_training("adam", steps=4)
    assert uncached[1] == uncached[2] == uncached[3], uncached
    assert not fresh_metrics.counter_value("InductorRecompile")


@pytest.mark.slow
def test_sgd_momentum_training_matches_eager(fresh_metrics):
    with index_zero_on("inductor"):
        uncached = compare_training("sgd_momentum", steps=4)
    assert uncached[1] == uncached[2] == uncached[3], uncached


def test_random_graphs_run_uncompiled_and_draw_eagers_numbers(fresh_metrics):
    probs = torch.linspace(0.05, 0.95, 60).reshape(6, 10)
    torch.manual_seed(5)
    eager = torch.bernoulli(probs) * 2
    torch.manual_seed(5)
    lazy = torch.bernoulli(probs.to(INDUCTOR)) * 2
    lr.mark_step()
    assert torch.equal(lazy.cpu(), eager)
    assert fresh_metrics.counter_value("InductorUncompiledRandomGraph") == 1


def _dropout_step(x, w):
    """Two dropouts and a uniform draw around arithmetic Inductor fuses."""
    h = torch.nn.functional.dropout(x @ w, 0.3, training=True)
    noise = torch.empty_like(h).uniform_(-0.1, 0.1)
    return torch.nn.functional.dropout((h + noise).relu(), 0.5, training=True).sum(dim=0)


def test_fresh_draws_become_inputs_and_the_graph_compiles_with_eagers_numbers(fresh_metrics):
    """Dropout's and ``uniform_``'s draws are made eagerly from each op's generator state
    before the compiled graph runs: eager's numbers bit for bit, step after step (each
    replay draws anew), and one compile, nothing run uncompiled."""
    x, w = torch.randn(6, 5), torch.randn(5, 7)
    lazy_x, lazy_w = x.to(INDUCTOR), w.to(INDUCTOR)
    for seed in (3, 4, 4):
        torch.manual_seed(seed)
        eager = _dropout_step(x, w)
        after_eager = torch.rand(3)
        torch.manual_seed(seed)
        lazy = _dropout_step(lazy_x, lazy_w)
        lr.mark_step()
        after_lazy = torch.rand(3)  # the live generator advanced as eager's
        torch.testing.assert_close(lazy.cpu(), eager, atol=1e-5, rtol=1e-5)
        assert torch.equal((lazy.cpu() == 0), (eager == 0))  # the same elements dropped
        assert torch.equal(after_lazy, after_eager)
    assert fresh_metrics.counter_value("InductorHoistedDraw") == 3
    assert not fresh_metrics.counter_value("InductorUncompiledRandomGraph")
    assert fresh_metrics.counter_value("UncachedCompile") == 1


def test_a_failing_compile_leaves_other_backends_intact(monkeypatch, fresh_metrics):
    def compute(device):
        x = torch.arange(6.0, device=device).reshape(2, 3)
        return (x * 3 - 1).relu().sum(dim=1)

    expected = compute("cpu")
    for device in ("lazygen:0", FX):  # fill the other backends' caches
        assert torch.equal(compute(device).cpu(), expected)
    sizes = {name: len(devices.cache_of(lr.backend(i))) for name, i in (("ts", 0), ("fx", 1))}

    def broken(module, inputs):
        raise RuntimeError("injected Inductor failure")

    inductor_cached = len(devices.cache_of(BACKENDS["inductor"]))
    fresh_metrics.reset()
    monkeypatch.setattr(inductor_backend, "CompiledGraph", broken)
    result = compute(INDUCTOR)
    with pytest.raises(lr.LazyGraphError, match="compilation.*'inductor'.*injected"):
        lr.mark_step()
    assert len(devices.cache_of(BACKENDS["inductor"])) == inductor_cached  # nothing half-built
    for device in ("lazygen:0", FX):  # still cached, still right
        assert torch.equal(compute(device).cpu(), expected)
    assert {
        name: len(devices.cache_of(lr.backend(i))) for name, i in (("ts", 0), ("fx", 1))
    } == sizes
    assert fresh_metrics.counter_value("UncachedCompile") == 1  # the failed one only
    monkeypatch.undo()
    del result


@pytest.mark.slow
def test_view_copy_is_lowered_as_reshape_and_compiles_for_strided_inputs():
    """Eager's ``view_copy`` copies any layout; Inductor's decomposition is a ``view``, which
    failed on the CPU flash-attention backward's strided gradients (every transformer's
    backward graph then ran eagerly under torch.compile(backend="lazygen"))."""
    ctx = FXLoweringContext("cpu", INDUCTOR_LOWERINGS)
    x = ctx.graph.placeholder("x")
    (node,) = ctx.call("aten::view_copy", [x, [12, 6, 4]], {}, 1)
    assert node.target is torch.ops.aten.reshape.default
    ctx.graph.output((node,))
    module = torch.fx.GraphModule(torch.nn.Module(), ctx.graph)
    strided = torch.randn(3, 6, 4, 4).permute(0, 2, 1, 3)
    (got,) = compile_graph_module(module, [strided])(strided)
    torch.testing.assert_close(got, torch.ops.aten.view_copy.default(strided, [12, 6, 4]))


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("aten::select_copy.int", [1, 2]),
        ("aten::slice_copy.Tensor", [1, 1, 5, 2]),
        ("aten::split_copy.Tensor", [2, 1]),
        ("aten::detach_copy", []),
        ("aten::transpose_copy.int", [0, 2]),
        ("aten::permute_copy", [[2, 0, 1]]),
        ("aten::expand_copy", [[2, 4, 6, 3]]),
        ("aten::unbind_copy.int", [1]),
        ("aten::view_copy", [[6, 12]]),
    ],
)
def test_view_copies_are_given_to_inductor_as_their_views(op, args):
    """As copies, Inductor ran some as extern calls no kernel fused with (a decoder step:
    30 ``select_copy``) and materialised the others in kernels of their own (8 ``t_copy``
    kernels); as views they fuse into their readers."""
    ctx = FXLoweringContext("cpu", INDUCTOR_LOWERINGS)
    x = ctx.graph.placeholder("x")
    (node,) = ctx.call(op, [x, *args], {}, 1)
    assert node.target is view_of(op)
    ctx.graph.output((node,))
    module = torch.fx.GraphModule(torch.nn.Module(), ctx.graph)
    x = torch.randn(4, 6, 3)
    (got,) = module(x)
    eager = getattr(torch.ops.aten, op[6:].split(".")[0])
    expected = eager(x, *args)
    if isinstance(expected, (list, tuple)):
        got, expected = torch.stack(list(got)), torch.stack(list(expected))
    assert torch.equal(got, expected)


def test_ops_that_need_contiguous_inputs_get_them_from_view_lowered_copies():
    """With view copies lowered as views, ``as_strided_copy`` (reads strides) and
    ``native_group_norm`` (its kernel needs contiguous input) would read a transposed view's
    storage: ``takes_contiguous_inputs`` gives them contiguous inputs."""
    ctx = FXLoweringContext("cpu", INDUCTOR_LOWERINGS)
    x = ctx.graph.placeholder("x")
    (t,) = ctx.call("aten::t_copy", [x], {}, 1)
    (strided,) = ctx.call("aten::as_strided_copy", [t, [3, 2], [1, 3], 0], {}, 1)
    (image,) = ctx.call("aten::view_copy", [t, [2, 2, 3]], {}, 1)
    (moved,) = ctx.call("aten::transpose_copy.int", [image, 1, 2], {}, 1)
    normed = ctx.call("aten::native_group_norm", [moved, None, None, 2, 3, 2, 1, 1e-5], {}, 3)
    ctx.graph.output((strided, normed[0]))
    module = torch.fx.GraphModule(torch.nn.Module(), ctx.graph)
    data = torch.randn(6, 2)
    got_strided, got_normed = module(data)
    copies = data.t().contiguous()
    torch.testing.assert_close(got_strided, torch.as_strided(copies, [3, 2], [1, 3], 0))
    moved_copy = copies.view(2, 2, 3).transpose(1, 2).contiguous()
    want = torch.ops.aten.native_group_norm(moved_copy, None, None, 2, 3, 2, 1, 1e-5)[0]
    torch.testing.assert_close(got_normed, want)


def test_a_scalar_a_lowering_needs_as_an_int_is_compiled_in(fresh_metrics, monkeypatch, tmp_path):
    """``constant_pad_nd``'s lowering converts its pad value to a number: a scalar input
    (an unbacked symbol) makes it raise "Cannot convert symbols to int" rather than a
    data-dependent error; that scalar is compiled in like the others (Llama pads its int64
    attention mask so under ``torch.compile``). Empty Inductor caches: the scalars found
    to need fixing are remembered there, and this compile must find it."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    mask = torch.ones(2, 8, dtype=torch.int64)
    got = torch.nn.functional.pad(mask.to(INDUCTOR), (0, 1), value=0)
    lr.mark_step()
    torch.testing.assert_close(got.cpu(), torch.nn.functional.pad(mask, (0, 1), value=0))
    assert fresh_metrics.counter_value("InductorFixedScalar")


def test_a_float_pad_value_is_compiled_in(fresh_metrics, monkeypatch, tmp_path, capsys):
    """A float pad value makes ``constant_pad_nd``'s lowering raise "Cannot convert
    expression to float" (the compile failed, and the program with it); compiled in, each
    value its own variant, which the recompile explanation names: the value, the op, the
    user's line."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(lr.state.settings, "explain_recompiles", True)
    monkeypatch.setattr(lr.state.settings, "record_source", True)
    x = torch.randn(2, 3)
    for value in (0.5, 2.0):
        got = torch.nn.functional.pad(x.to(INDUCTOR), (1, 2), value=value)
        torch.testing.assert_close(got.cpu(), torch.nn.functional.pad(x, (1, 2), value=value))
    assert fresh_metrics.counter_value("InductorFixedScalar") == 1
    assert fresh_metrics.counter_value("InductorRecompile") == 1
    err = capsys.readouterr().err
    assert "reason: value" in err and "constant_pad_nd" in err, err
    assert "now:    2.0" in err and "cached: 0.5" in err, err
    assert "test_inductor_backend.py:" in err, err
    assert fresh_metrics.counter_value("Recompile_value") == 1


def test_only_the_scalars_a_refusing_lowering_reads_are_compiled_in(fresh_metrics):
    """A lowering that refuses a scalar input names no node of the graph, only its target
    (``LoweringException``'s "target: aten.constant_pad_nd.default"); only the scalars that
    op reads are compiled in. All of them were, GPT-2's AdamW step's bias corrections with
    them, and every step compiled a variant for their new values."""
    labels, x = torch.arange(8).view(2, 4), torch.randn(2, 3)
    lazy_labels, lazy_x = labels.to(INDUCTOR), x.to(INDUCTOR)
    for step in range(1, 4):
        step_size = 0.1 * step  # changes every step, as Adam's does
        # GPT-2's loss pads its labels so (an int tensor, an int value)
        padded = torch.nn.functional.pad(lazy_labels, (0, 1), value=-100)
        updated = lazy_x.addcdiv(lazy_x, lazy_x + 2, value=-step_size)
        lr.mark_step()
        torch.testing.assert_close(
            padded.cpu(), torch.nn.functional.pad(labels, (0, 1), value=-100)
        )
        torch.testing.assert_close(updated.cpu(), x.addcdiv(x, x + 2, value=-step_size))
    assert fresh_metrics.counter_value("InductorFixedScalar") == 1
    assert not fresh_metrics.counter_value("InductorRecompile")


def test_an_error_naming_only_a_symbol_fixes_the_input_read_as_it():
    """Llama's backward failed in an Inductor pass (``reinplace``'s view-scatter rewrite)
    on a guard over an unbacked symbol, its text naming no node of the lazy graph: every
    scalar was compiled in, AdamW's bias corrections too, and each step recompiled. The
    symbol names the input: the read in the graph of the node being rewritten (aot's,
    whose inputs are the lazy graph's in order) whose value it is."""
    graph = torch.fx.Graph()
    weight, step_size = graph.placeholder("weight"), graph.placeholder("step_size")
    read = graph.call_function(torch.ops.aten._local_scalar_dense.default, (step_size,))
    read.meta["val"] = "u7"  # a SymInt prints as its symbol
    scatter = graph.call_function(torch.ops.aten.mul.Tensor, (weight, read))

    def rewrite(node):
        raise RuntimeError("Could not guard on data-dependent expression u7 <= 0")

    try:
        rewrite(scatter)
    except RuntimeError as error:
        nodes = inductor_culprits.frame_nodes(error)
        assert nodes == [scatter]
        assert inductor_culprits.symbol_reads(str(error), nodes) == {1}
        assert inductor_culprits.symbol_reads("no symbol here", nodes) == set()


def test_a_scalar_a_lowering_hands_to_a_fallback_kernel_is_compiled_in(
    fresh_metrics, monkeypatch, tmp_path
):
    """Inductor lowers ``scatter.value`` to ATen's kernel, and the FX node of that call
    cannot take the scalar input's unbacked symbol (Inductor raised "argument of type:
    <class 'sympy.core.symbol.Symbol'>"): that scalar is compiled in like the others
    (sampling loops mask drawn tokens so: ``logits.scatter(1, token, -inf)``)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    logits, token = torch.randn(2, 5), torch.tensor([[1], [3]])
    got = logits.to(INDUCTOR).scatter(1, token.to(INDUCTOR), -1.0)
    lr.mark_step()
    torch.testing.assert_close(got.cpu(), logits.scatter(1, token, -1.0))
    assert fresh_metrics.counter_value("InductorFixedScalar")


def test_fake_tensor_meta_failures_are_not_logged_while_lazygen_compiles(caplog):
    """A failed meta kernel during lazygen's compile is handled (scalars fixed, compiled
    again) or reported by lazygen; fake-tensor's ERROR traceback of it is not printed
    (Llama's backward showed one per compile for a slice step it then compiled in)."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    with caplog.at_level(logging.ERROR, logger=logger.name):
        with inductor_trace.fake_tensor_errors_unlogged():
            logger.error("failed while attempting to run meta for %s", "aten.slice_copy.Tensor")
            logger.error("another error")
        logger.error("failed while attempting to run meta for %s", "outside lazygen")
    assert [r.getMessage() for r in caplog.records] == [
        "another error",
        "failed while attempting to run meta for outside lazygen",
    ]


def _transposing_graph() -> torch.fx.GraphModule:
    """``x.t() @ w + b``: an input read through a view (the layout the removed checks
    compared) and one read by an extern kernel."""
    g = torch.fx.Graph()
    x, w, b = (g.placeholder(n) for n in ("x", "w", "b"))
    xt = g.call_function(torch.ops.aten.t.default, (x,))
    mm = g.call_function(torch.ops.aten.mm.default, (xt, w))
    g.output((g.call_function(torch.ops.aten.add.Tensor, (mm, b)),))
    return torch.fx.GraphModule(torch.nn.Module(), g)


def test_lazy_graphs_are_compiled_with_the_cpp_wrapper_and_no_input_checks():
    """Inductor's code for a lazy graph is one C++ function (no Python call per kernel and
    buffer) without the per-call ``assert_size_stride`` of every input: its inputs are
    contiguous with the compiled sizes by construction (``compile.py``, "Per-call
    costs")."""
    inputs = [torch.randn(5, 3), torch.randn(5, 4), torch.randn(4)]
    compiled = compile_graph_module(_transposing_graph(), inputs)
    source = compiled.compiled.source_code  # the DirectCall's CompiledFxGraph
    assert "inductor_entry_impl" in source and "assert_size_stride(" not in source
    (got,) = compiled(*inputs)
    torch.testing.assert_close(got, inputs[0].t() @ inputs[1] + inputs[2])


def test_a_graph_whose_cpp_wrapper_fails_is_compiled_with_the_python_one(
    monkeypatch, fresh_metrics
):
    from torch._inductor import config as inductor_config
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    def fail(self, *args, **kwargs):
        raise RuntimeError("C++ wrapper codegen failed (test)")

    monkeypatch.setattr(CppWrapperCpu, "generate", fail)
    inputs = [torch.randn(5, 3), torch.randn(5, 4), torch.randn(4)]
    with inductor_config.patch(fx_graph_cache=False):  # a cached C++ wrapper would load
        compiled = compile_graph_module(_transposing_graph(), inputs)
    assert "def call(" in compiled.compiled.source_code  # Python
    assert fresh_metrics.counter_value("InductorPythonWrapper") == 1
    (got,) = compiled(*inputs)
    torch.testing.assert_close(got, inputs[0].t() @ inputs[1] + inputs[2])


def test_a_graph_calling_a_kernel_without_a_c_shim_uses_the_python_wrapper(caplog, fresh_metrics):
    """torch 2.13's C++ wrapper calls a fallback kernel without a C shim through the
    dispatcher with boxed arguments, and gets some schemas wrong (sizes boxed as a generic
    list: "Expected IntList but got GenericList"): such a graph gets the Python wrapper, and
    Inductor's warning about the missing shim is not shown. (Antialiased bilinear
    interpolation: a kernel with neither a shim nor a decomposition.)"""
    image = torch.randn(1, 2, 3, 3)
    with caplog.at_level(logging.WARNING):
        got = torch.nn.functional.interpolate(
            image.to(INDUCTOR), scale_factor=2.0, mode="bilinear", antialias=True
        )
        got = got.cpu()
    want = torch.nn.functional.interpolate(image, scale_factor=2.0, mode="bilinear", antialias=True)
    torch.testing.assert_close(got, want)
    assert fresh_metrics.counter_value("InductorPythonWrapper") == 1
    assert not [r for r in caplog.records if "c-shim" in r.getMessage()]


_DECOMPOSED_OPS_PROGRAM = """
import torch, torch.nn.functional as F, lazygen.runtime as lr
lr.init(backend="inductor")
image, volume = torch.randn(1, 2, 4, 4), torch.randn(1, 2, 3, 4, 4)
def resized(x, v):
    return (
        F.interpolate(x, scale_factor=2.0, mode="bilinear").sum()
        + F.interpolate(x, scale_factor=2.0, mode="bicubic").sum()
        + F.interpolate(v, scale_factor=2.0, mode="trilinear").sum()
    )
got = resized(image.to(lr.device()), volume.to(lr.device())).cpu()  # read: no mark_step
torch.testing.assert_close(got, resized(image, volume), rtol=1e-5, atol=1e-4)
assert lr.metrics.counter_value("UncachedCompile") == 1
assert lr.metrics.counter_value("InductorExtraDecomposition") == 3, lr.metrics.counters()
print("ok")
"""


def test_ops_inductor_decomposes_compile_with_ci_set_and_a_cold_cache(tmp_path):
    """Inductor refuses an op that reaches its lowering undecomposed although a
    decomposition exists, where ``CI`` is set ("make_fallback(...): a decomposition exists,
    we should switch to it"); the lazy device's ``upsample_*`` ops did, read with
    ``.cpu()`` alone (the compile ran inside the lazy tensor's dispatch, where torch's
    autograd-key decomposition is skipped) and, for ``trilinear``, always. Its own process:
    the environment variable, an empty Inductor cache (a cached graph skips the lowering),
    and no earlier fallback of these ops registered in Inductor's lowerings."""
    env = {**os.environ, "CI": "true", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", _DECOMPOSED_OPS_PROGRAM],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


def test_a_compile_inside_a_dispatch_sees_the_plain_dispatch_state():
    """``outside_dispatch``: the excluded keys of a running ``__torch_dispatch__`` and an
    active dispatch mode are not seen inside the block, and are back after it."""
    seen = {}

    class Probe(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    autograd = torch._C.DispatchKey.AutogradCPU
    with Probe(), torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(autograd)):
        with outside_dispatch():
            seen["excluded"] = torch._C._dispatch_tls_is_dispatch_key_excluded(autograd)
            seen["modes"] = torch._C._len_torch_dispatch_stack()
        seen["after"] = torch._C._dispatch_tls_is_dispatch_key_excluded(autograd)
        seen["modes_after"] = torch._C._len_torch_dispatch_stack()
    assert seen == {"excluded": False, "modes": 0, "after": True, "modes_after": 1}


def test_an_error_inside_compiled_code_is_raised_not_fatal():
    """An index out of range fails in a kernel called by the C++ wrapper: the user gets
    the graph's error, and the process lives on."""
    x, index = torch.randn(5).to(INDUCTOR), torch.tensor([1, 10]).to(INDUCTOR)
    with pytest.raises(LazyGraphError, match="out of bounds"):
        (x[index] * 2).cpu()
    torch.testing.assert_close((x * 2).cpu(), x.cpu() * 2)


def test_strided_results_feed_later_graphs_contiguous(fresh_metrics):
    """What the dropped checks guarded, end to end: one graph compiled for a contiguous
    input runs again on a graph's result that is a strided view (a transpose) and on a
    transposed host tensor, of the same sizes: each is fed contiguous, equal to eager."""
    a = torch.randn(6, 4)
    sources = [torch.randn(4, 6), (a * 2).t(), torch.randn(6, 4).t()]
    lazy_sources = [sources[0].to(INDUCTOR), (a.to(INDUCTOR) * 2).t(), sources[2].to(INDUCTOR)]
    lr.mark_step()  # the transpose's result becomes device data
    for source, lazy_source in zip(sources, lazy_sources, strict=True):
        got = (lazy_source.sin() * 3).cpu()  # the same graph, compiled once
        torch.testing.assert_close(got, source.sin() * 3)
    assert fresh_metrics.counter_value("UncachedCompile") == 2  # the transpose, the sin
